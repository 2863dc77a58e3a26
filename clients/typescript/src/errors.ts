/**
 * The errors the client throws: one per kind of `{"error": …}` answer, mirroring the Python
 * library's exception tree (`memorybank.MemoryBankError` and its subclasses).
 */

/** Every error the server answers (`{"error": "<what to fix>"}`), with its HTTP status. */
export class MemoryBankError extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;

  constructor(message: string, status: number, body: Record<string, unknown> = {}) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.body = body;
  }
}

/** Bad input (400, 413, 415, 422); `field` names the input to fix, when the server says. */
export class ValidationError extends MemoryBankError {
  get field(): string | undefined {
    return typeof this.body.field === "string" ? this.body.field : undefined;
  }
}

/** No such memory, plan, thread or project, or not the caller's (404). */
export class NotFound extends MemoryBankError {}

/** No valid API key (401), or the caller's role does not allow this (403). */
export class PermissionDenied extends MemoryBankError {}

/** Already stored, or memory is off for the thread (409). */
export class Conflict extends MemoryBankError {}

/** Over a per-user limit (429: writes a minute, webhook test sends a minute, open event streams); `retryAfter` is the seconds to wait. */
export class RateLimited extends MemoryBankError {
  readonly retryAfter: number;

  constructor(message: string, status: number, body: Record<string, unknown>, retryAfter: number) {
    super(message, status, body);
    this.retryAfter = retryAfter;
  }
}

/** The model provider failed (502). */
export class ProviderError extends MemoryBankError {}

/** The database refused (503, 507), or the server could not be reached at all (status 0). */
export class StoreError extends MemoryBankError {}

/** The error an answer stands for. */
export function errorFor(status: number, body: Record<string, unknown>, retryAfter: number): MemoryBankError {
  const message = typeof body.error === "string" ? body.error : `HTTP ${status}`;
  if ([400, 413, 415, 422].includes(status)) return new ValidationError(message, status, body);
  if (status === 401 || status === 403) return new PermissionDenied(message, status, body);
  if (status === 404) return new NotFound(message, status, body);
  if (status === 409) return new Conflict(message, status, body);
  if (status === 429) return new RateLimited(message, status, body, retryAfter);
  if (status === 502) return new ProviderError(message, status, body);
  if (status === 503 || status === 507) return new StoreError(message, status, body);
  return new MemoryBankError(message, status, body);
}
