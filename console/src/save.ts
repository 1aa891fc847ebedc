/**
 * Writing an export to disk as it arrives, not after: {@link openSaveSink} gives a sink that text is
 * written into chunk by chunk.
 * - Where the browser has the File System Access API (`window.showSaveFilePicker`, Chromium-based
 *   browsers; https://developer.mozilla.org/docs/Web/API/Window/showSaveFilePicker), the user picks
 *   the file first and each batch is written into it (`FileSystemWritableFileStream.write`): the page
 *   holds one batch at a time.
 * - Elsewhere (Firefox, Safari) the sink builds a Blob incrementally: each batch is appended to the
 *   Blob built so far (`new Blob([soFar, batch])`), so the page's heap holds one batch while the
 *   browser keeps the Blob's bytes in its blob store (Chromium's moves large blobs to disk); the
 *   download is offered when the export ends. No service worker (which StreamSaver-style streaming
 *   would need, with its page on a second origin the CSP forbids).
 * @module
 */
import { download } from "./ui.js";

/** Where an export's text goes, in order. */
export interface SaveSink {
  /** `picker` (a file the user chose, written as it goes) or `blob` (downloaded at the end). */
  readonly mode: "picker" | "blob";
  /** Appends text (kept until a batch of {@link BATCH_CHARS} is full, then written). */
  write(text: string): Promise<void>;
  /** Writes the rest and finishes the file (picker) or offers the download (blob). */
  close(): Promise<void>;
  /** Gives up: the partly written file is discarded (picker) or nothing is offered (blob). */
  abort(): Promise<void>;
}

/** Characters gathered before a write to the file or Blob: ~1 MB of ASCII. */
export const BATCH_CHARS = 1 << 20;

interface SaveFilePickerOptions {
  suggestedName?: string;
  types?: Array<{ description: string; accept: Record<string, string[]> }>;
}

type SaveFilePicker = (options: SaveFilePickerOptions) => Promise<FileSystemFileHandle>;

/** `window.showSaveFilePicker` when the browser has it (not yet in TypeScript's DOM library). */
const picker = (): SaveFilePicker | null => {
  const p = (window as unknown as { showSaveFilePicker?: unknown }).showSaveFilePicker;
  return typeof p === "function" ? (p as SaveFilePicker).bind(window) : null;
};

/** A sink that gathers text into batches of {@link BATCH_CHARS} and hands each to `flush`. */
function batching(flush: (batch: string) => Promise<void>) {
  let parts: string[] = [];
  let size = 0;
  return {
    async write(text: string) {
      parts.push(text);
      size += text.length;
      if (size >= BATCH_CHARS) await this.drain();
    },
    async drain() {
      if (parts.length === 0) return;
      const batch = parts.join("");
      parts = [];
      size = 0;
      await flush(batch);
    },
  };
}

/**
 * Opens the sink of an export. Call it first in the click handler: the save dialog needs the
 * click's user activation, which an awaited request before it would use up.
 * @param name - the suggested file name, e.g. `event.ndjson`.
 * @param type - its media type, e.g. `application/x-ndjson`.
 * @returns the sink, or null when the user cancelled the save dialog.
 * @throws the File System Access API's errors other than a cancelled dialog (`AbortError`).
 */
export async function openSaveSink(name: string, type: string): Promise<SaveSink | null> {
  const show = picker();
  if (show) {
    let handle: FileSystemFileHandle;
    try {
      const ext = name.slice(name.lastIndexOf("."));
      handle = await show({ suggestedName: name, types: [{ description: ext.slice(1).toUpperCase(), accept: { [type]: [ext] } }] });
    } catch (err) {
      if (err instanceof DOMException && err.name === "AbortError") return null;
      throw err;
    }
    const file = await handle.createWritable();
    const b = batching((batch) => file.write(batch));
    return {
      mode: "picker",
      write: (text) => b.write(text),
      async close() {
        await b.drain();
        await file.close();
      },
      abort: () => file.abort(),
    };
  }
  let blob = new Blob([], { type });
  const b = batching(async (batch) => {
    blob = new Blob([blob, batch], { type });
  });
  return {
    mode: "blob",
    write: (text) => b.write(text),
    async close() {
      await b.drain();
      download(name, type, [blob]);
    },
    async abort() {
      blob = new Blob([], { type });
    },
  };
}
