/**
 * Secrets never reach an error message or a log line: the one place that masks the password of a
 * URL, for a whole URL given as a setting and for URLs inside free text (error messages, stacks).
 */

/**
 * A URL with everything between `//` and its last `@` masked, keeping a user name before `:`
 * (`redis://app:***@host:6379`). The last `@` counts, so a password holding `@`, `/` or `:` is masked whole;
 * a malformed URL without `//` is masked from its start.
 */
export function redactUrl(url: string): string {
  const at = url.lastIndexOf('@');
  if (at === -1) return url;
  const slashes = url.indexOf('//');
  const start = slashes !== -1 && slashes < at ? slashes + 2 : 0;
  const userinfo = url.slice(start, at);
  const colon = userinfo.indexOf(':');
  return `${url.slice(0, start)}${colon === -1 ? '***' : `${userinfo.slice(0, colon)}:***`}${url.slice(at)}`;
}

/** Free text with the password of every `scheme://user:password@` in it masked (up to the token's last `@`). */
export function redactUrlsIn(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^:@/\s]*):\S*@/gi, '$1:***@');
}
