/**
 * Small shared pieces of the console's pages.
 * @module
 */
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

/** The problems naming one JSON path, shown next to its field. */
export function FieldErrors({ problems, path }: { problems: readonly ApiProblem[]; path: string }) {
  const mine = problems.filter((p) => p.path === path);
  if (mine.length === 0) return null;
  return (
    <span class="field-error" role="alert" data-error-path={path}>
      {mine.map((p) => (
        <span key={p.code}>
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
