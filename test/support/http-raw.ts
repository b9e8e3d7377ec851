/**
 * One HTTP/1.1 request sent with its path exactly as given (fetch and URL would resolve `/a/../login` and
 * `//login` before sending, hiding what an attacker can send), on a fresh connection, with the answer read whole.
 */
import { request, type IncomingHttpHeaders } from 'node:http';

export interface RawAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export function rawHttp(port: number, method: string, path: string, headers: Record<string, string> = {}, timeoutMs = 10_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
