/**
 * The console's one way to the API: `fetch` on this origin with `Authorization: Bearer <token>`.
 * The token lives in the tab's `sessionStorage` only (gone when the tab closes), never in a URL,
 * a cookie or a log line. Error answers (`{error: {code, message, path}, errors: […]}`, docs/api.md
 * "Errors") become {@link ApiFailure}s carrying every problem.
 * @module
 */

/** One problem of an API error answer. */
export interface ApiProblem {
  code: string;
  message: string;
  path: string | null;
}

/** An API answer with a status of 400 or more. */
export class ApiFailure extends Error {
  constructor(
    /** The HTTP status. */
    readonly status: number,
    /** Every problem the answer lists (at least one; a non-JSON answer gives one with code `HTTP_<status>`). */
    readonly problems: ApiProblem[],
  ) {
    super(problems[0]?.message ?? `HTTP ${status}`);
  }
  /** The first problem's code. */
  get code(): string {
    return this.problems[0]?.code ?? `HTTP_${this.status}`;
  }
}

const TOKEN_KEY = "chainsift.console.token";

/** The token of this tab, or null before sign-in. */
export function currentToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** Keeps the token for this tab (null: forget it). */
export function setToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

async function failure(res: Response): Promise<ApiFailure> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: ApiProblem | { type?: string; reason?: string }; errors?: ApiProblem[] };
    if (Array.isArray(body.errors) && body.errors.length > 0) return new ApiFailure(res.status, body.errors);
    const e = body.error as (ApiProblem & { type?: string; reason?: string }) | undefined;
    if (e)
      return new ApiFailure(res.status, [
        { code: e.code ?? e.type ?? `HTTP_${res.status}`, message: e.message ?? e.reason ?? text, path: e.path ?? null },
      ]);
  } catch {
    // not JSON: below
  }
  return new ApiFailure(res.status, [{ code: `HTTP_${res.status}`, message: text || res.statusText, path: null }]);
}

/**
 * Calls an API route and answers the raw response (status < 400).
 * @param token - a token to use instead of the tab's (sign-in checks one before keeping it).
 * @throws ApiFailure for an error status.
 */
export async function apiResponse(method: string, path: string, body?: unknown, token?: string): Promise<Response> {
  const t = token ?? currentToken();
  const headers: Record<string, string> = {};
  if (t) headers.authorization = `Bearer ${t}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  if (res.status >= 400) throw await failure(res);
  return res;
}

/**
 * Calls an API route and parses its JSON answer (null for 204).
 * @throws ApiFailure for an error status.
 */
export async function api<T>(method: string, path: string, body?: unknown, token?: string): Promise<T> {
  const res = await apiResponse(method, path, body, token);
  if (res.status === 204) return null as T;
  return (await res.json()) as T;
}

/**
 * Reads an NDJSON answer line by line as it arrives (e.g. `POST /alerting/rules/test/`).
 * @param onLine - called with each parsed line.
 */
export async function readNdjson(res: Response, onLine: (line: Record<string, unknown>) => void): Promise<void> {
  const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
  if (!reader) return;
  let rest = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (value) rest += value;
    let nl = rest.indexOf("\n");
    while (nl >= 0) {
      const line = rest.slice(0, nl).trim();
      rest = rest.slice(nl + 1);
      if (line) onLine(JSON.parse(line) as Record<string, unknown>);
      nl = rest.indexOf("\n");
    }
    if (done) break;
  }
  if (rest.trim()) onLine(JSON.parse(rest) as Record<string, unknown>);
}

/** A served chain as `GET /chains/` lists it. */
export interface ChainStatus {
  technology: string;
  blockchain: string;
  network: string;
  chainId: number | null;
  searchPath: string;
  head: number | null;
  headAt: string | null;
  ingested: { number: number; hash: string } | null;
  lagBlocks: number | null;
  lagSeconds: number | null;
}

/** `technology/blockchain/network` of a chain. */
export const chainKey = (c: Pick<ChainStatus, "technology" | "blockchain" | "network">): string =>
  `${c.technology}/${c.blockchain}/${c.network}`;

/** The served chains (`GET /chains/`). */
export async function listChains(): Promise<ChainStatus[]> {
  return (await api<{ chains: ChainStatus[] }>("GET", "/chains/")).chains;
}

/** A served chain's consumer health as `GET /chains/health/` answers it (what `chainsift status` shows). */
export interface ChainHealth {
  technology: string;
  blockchain: string;
  network: string;
  /** Each stage's consumer group: records not yet consumed (null: the group never committed). */
  groups: Array<{ stage: string; lag: number | null; partitions: number }>;
  /** Records written to the chain's dead-letter topic in the last hour (null: not readable). */
  deadLettersLastHour: number | null;
}

/** The consumer health of every served chain (`GET /chains/health/`). */
export async function chainsHealth(): Promise<ChainHealth[]> {
  return (await api<{ chains: ChainHealth[] }>("GET", "/chains/health/")).chains;
}

/** One hit of a hits envelope. */
export interface Hit {
  _index: string;
  _id: string;
  _source: Record<string, unknown>;
  sort?: unknown[];
}

/** The hits envelope of a search (docs/api.md "Response: the hits envelope"). */
export interface SearchAnswer {
  took: number;
  hits: { total: number | { value: number }; hits: Hit[] };
  aggregations?: Record<string, unknown>;
}

/** The total of a hits envelope (a number, or `{value}`). */
export const totalOf = (a: SearchAnswer): number => (typeof a.hits.total === "number" ? a.hits.total : a.hits.total.value);

/** Runs a search: `POST <searchPath><kinds>/search/`. */
export async function search(chain: ChainStatus, kinds: string, body: unknown): Promise<SearchAnswer> {
  return api<SearchAnswer>("POST", `${chain.searchPath}${kinds}/search/`, body);
}
