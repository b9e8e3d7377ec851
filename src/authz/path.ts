/**
 * The path an authz `path` action puts in its descriptor: one spelling per resource, so that a limit on `/login`
 * cannot be escaped by writing `/login/`, `//login`, `/%6cogin`, `/a/../login` or `/%2Flogin`.
 *
 * It is what Envoy makes of a path with `normalize_path`, `merge_slashes` and an unescaping
 * `path_with_escaped_slashes_action` (envoy-ext-authz.yaml), plus two steps Envoy does not take, so the key is the
 * same whether or not Envoy normalized first:
 *  1. percent-escapes of unreserved characters (RFC 3986 §2.3: letters, digits, `-._~`) are decoded, escaped
 *     slashes and backslashes (`%2F`, `%5C`) become `/`, a backslash becomes `/`; other escapes keep their bytes
 *     with upper-case hex (§6.2.2.1), bytes outside printable ASCII are escaped;
 *  2. dot segments are removed (§5.2.4) and runs of slashes merged;
 *  3. (not Envoy) `;parameters` are dropped from each segment: servers such as Tomcat route `/login;x` to `/login`;
 *  4. (not Envoy) a trailing slash is dropped (`/login/` → `/login`; `/` stays), as most servers route both alike.
 * The query string is kept as it came. Case is kept: paths are case-sensitive, as Envoy's route matching is.
 */

const HEX = '0123456789ABCDEF';
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** Step 1 on the path part: decoded, re-escaped and with every separator spelled `/`. */
function canonicalEscapes(path: string): string {
  let out = '';
  const bytes = Buffer.from(path, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b === 0x25 && i + 2 < bytes.length && isHex(bytes[i + 1]) && isHex(bytes[i + 2])) {
      const value = parseInt(String.fromCharCode(bytes[i + 1]!, bytes[i + 2]!), 16);
      i += 2;
      const ch = String.fromCharCode(value);
      out += value === 0x2f || value === 0x5c ? '/' : UNRESERVED.test(ch) ? ch : escapeByte(value);
    } else if (b === 0x5c) {
      out += '/';
    } else if (b > 0x20 && b < 0x7f) {
      out += String.fromCharCode(b);
    } else {
      out += escapeByte(b);
    }
  }
  return out;
}

function isHex(b: number | undefined): boolean {
  return b !== undefined && ((b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66));
}

const escapeByte = (b: number) => `%${HEX[b >> 4]!}${HEX[b & 15]!}`;

/** Steps 2 to 4 on a path of `/`-separated segments. */
function canonicalSegments(path: string): string {
  const out: string[] = [];
  for (const raw of path.split('/')) {
    const semi = raw.indexOf(';');
    const segment = semi < 0 ? raw : raw.slice(0, semi);
    if (segment === '' || segment === '.') continue;
    if (segment === '..') out.pop();
    else out.push(segment);
  }
  return `/${out.join('/')}`;
}

/**
 * The normalized form of a request path; the query string (from the first `?`) is kept unchanged. A target that
 * is not a path (`*` of `OPTIONS *`) is returned as it is.
 */
export function normalizePath(target: string): string {
  if (!target.startsWith('/')) return target;
  const q = target.search(/[?#]/);
  const path = q < 0 ? target : target.slice(0, q);
  const rest = q < 0 ? '' : target.slice(q);
  return canonicalSegments(canonicalEscapes(path)) + rest;
}
