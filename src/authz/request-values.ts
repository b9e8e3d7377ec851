/**
 * Values read from an HTTP request for the authz actions: a cookie, a query parameter, the path without
 * its query, and the header lookup shared by the header actions and matchers.
 */

/** The value of cookie `name` in a Cookie header (`a=1; b="2"`): the first one, quotes removed; undefined when absent. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
  }
  return undefined;
}

/** The query string of a request target (after '?', before '#'), or '' when there is none. */
function queryOf(path: string): string {
  const q = path.indexOf('?');
  if (q < 0) return '';
  const hash = path.indexOf('#', q);
  return path.slice(q + 1, hash < 0 ? undefined : hash);
}

/** Percent-decodes ('+' stays '+', as Envoy does); a malformed escape leaves the text as it is. */
function decode(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The first value of query parameter `name` (decoded); '' for `?name` with no '='; undefined when absent. */
export function queryParameter(path: string, name: string): string | undefined {
  const query = queryOf(path);
  if (query === '') return undefined;
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const key = decode(eq < 0 ? pair : pair.slice(0, eq));
    if (key === name) return eq < 0 ? '' : decode(pair.slice(eq + 1));
  }
  return undefined;
}

/** The path without query string and fragment. */
export function pathWithoutQuery(path: string): string {
  const end = path.search(/[?#]/);
  return end < 0 ? path : path.slice(0, end);
}
