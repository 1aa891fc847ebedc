/**
 * For unit tests of functions that throw the API's errors: the code and path of the `ApiError` a
 * call throws, undefined when it returns; any other error is rethrown.
 * @module
 */
import { ApiError } from "../../api/errors.js";

/** The `{code, path}` of the ApiError `fn` throws, or undefined when it does not throw. */
export function apiFailure(fn: () => unknown): { code: string; path: string | null } | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code, path: err.path };
    throw err;
  }
  return undefined;
}
