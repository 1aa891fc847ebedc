/**
 * Helper to make a Fastify plugin non-encapsulated (its decorators and hooks apply to the whole
 * app), the documented `skip-override` mechanism that the `fastify-plugin` package also uses
 * (https://fastify.dev/docs/latest/Reference/Plugins/#handle-the-scope).
 * @module
 */
import type { FastifyPluginAsync, FastifyPluginOptions } from "fastify";

/**
 * Marks `fn` so that Fastify does not encapsulate it, and names it in Fastify's plugin tree.
 * @returns `fn` itself.
 */
export function globalPlugin<O extends FastifyPluginOptions>(fn: FastifyPluginAsync<O>, name: string): FastifyPluginAsync<O> {
  Object.assign(fn, { [Symbol.for("skip-override")]: true, [Symbol.for("fastify.display-name")]: name });
  return fn;
}
