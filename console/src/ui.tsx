/**
 * Small shared pieces of the console's pages.
 * @module
 */
import type { ComponentChildren, FunctionComponent } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { ApiFailure, ApiProblem } from "./api.js";

/** An API failure, every problem with its code and path. */
export function ErrorBox({ error }: { error: ApiFailure | null }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      {error.problems.map((p) => (
        <p key={`${p.code}${p.path}`}>
          <code>{p.code}</code> {p.path ? <code>{p.path}</code> : null} {p.message}
        </p>
      ))}
    </div>
  );
}

/** The problems naming one JSON path (with `within`: that path or any path inside it), shown next to its field. */
export function FieldErrors({ problems, path, within = false }: { problems: readonly ApiProblem[]; path: string; within?: boolean }) {
  const mine = problems.filter((p) => p.path === path || (within && (p.path?.startsWith(`${path}[`) || p.path?.startsWith(`${path}.`))));
  if (mine.length === 0) return null;
  return (
    <span class="field-error" role="alert" data-error-path={path}>
      {mine.map((p) => (
        <span key={`${p.code}${p.path}`}>
          <code>{p.code}</code> {p.message}
        </span>
      ))}
    </span>
  );
}

/** Offers a text as a file download (a Blob URL, revoked after the click). */
export function download(name: string, type: string, parts: BlobPart[]): void {
  const url = URL.createObjectURL(new Blob(parts, { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A region that scrolls (wide or long tables): a focus stop with a name, so keyboards can scroll it. */
export function Scroll({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region needs a focus stop (axe-core scrollable-region-focusable)
    <section class="scroll" tabIndex={0} aria-label={label}>
      {children}
    </section>
  );
}

/** A table's header row of plain column names. */
export function Head({ cols }: { cols: readonly string[] }) {
  return (
    <thead>
      <tr>
        {cols.map((c) => (
          <th scope="col" key={c}>
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/**
 * A page component loaded on first use with a dynamic `import()` (its module, and the libraries only
 * it imports, are a separate chunk of the build, console/build.ts): shows "Loading…" until then.
 * @param load - the dynamic import, resolving to the component.
 */
export function lazyPage<P extends object>(load: () => Promise<FunctionComponent<P>>): FunctionComponent<P> {
  let loaded: FunctionComponent<P> | null = null;
  let pending: Promise<FunctionComponent<P>> | null = null;
  return function LazyPage(props: P) {
    const [Page, setPage] = useState<FunctionComponent<P> | null>(() => loaded);
    useEffect(() => {
      if (Page) return;
      pending ??= load().then((c) => {
        loaded = c;
        return c;
      });
      void pending.then((c) => setPage(() => c));
    }, []);
    return Page ? <Page {...props} /> : <p class="hint">Loading…</p>;
  };
}
