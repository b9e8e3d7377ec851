/** A problem that stops the service from starting (bad rules, unusable settings, a port in use). */
export class StartupError extends Error {
  constructor(
    message: string,
    readonly details: readonly string[] = [],
  ) {
    super(details.length > 0 ? `${message}\n  ${details.join('\n  ')}` : message);
    this.name = 'StartupError';
  }
}
