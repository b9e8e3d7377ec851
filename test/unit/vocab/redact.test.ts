/** One place masks URL passwords, for settings and for free text (errors, stacks, log messages). */
import { describe, expect, it } from 'vitest';
import { redactUrl, redactUrlsIn } from '../../../src/vocab/redact.js';

describe('redactUrl', () => {
  it('masks everything up to the last @, keeping the user name', () => {
    expect(redactUrl('redis://app:s3cret@db:6379/2')).toBe('redis://app:***@db:6379/2');
    expect(redactUrl('redis://app:p@ss/w:rd@db:6379')).toBe('redis://app:***@db:6379');
    expect(redactUrl('redis://:only@db')).toBe('redis://:***@db');
    expect(redactUrl('redis:/user:hunter2@127.0.0.1')).toBe('redis:***@127.0.0.1');
    expect(redactUrl('redis://db:6379')).toBe('redis://db:6379');
  });
});

describe('redactUrlsIn', () => {
  it('masks a password holding @ or / inside free text, and every URL of the text', () => {
    const text = 'cannot reach rediss://app:p@ss/w@db:6380 (then redis://u:x@other): ECONNREFUSED';
    const out = redactUrlsIn(text);
    expect(out).toBe('cannot reach rediss://app:***@db:6380 (then redis://u:***@other): ECONNREFUSED');
    expect(out).not.toMatch(/p@ss|w@db|:x@/);
  });

  it('leaves text without credentials alone', () => {
    expect(redactUrlsIn('listening on http://127.0.0.1:8080, mail ops@example.com')).toBe('listening on http://127.0.0.1:8080, mail ops@example.com');
  });
});
