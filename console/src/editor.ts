/**
 * The query editor: CodeMirror 6 with JSON highlighting, bracket matching and completion of field
 * names (inside a JSON string) from the record kinds' mapping, mounted in a shadow root so that its
 * styles are constructed style sheets (the console's Content-Security-Policy has no 'unsafe-inline').
 * @module
 */
import { autocompletion, type CompletionContext, type CompletionResult } from "@codemirror/autocomplete";
import { json, jsonLanguage } from "@codemirror/lang-json";
import { basicSetup, EditorView } from "codemirror";

/** A mounted editor: read and replace its text, and change the completion list. */
export interface QueryEditor {
  text(): string;
  setText(text: string): void;
  setFields(fields: readonly string[]): void;
  destroy(): void;
}

/**
 * Mounts an editor in `parent`.
 * @param label - the accessible name of the editing area.
 */
export function mountEditor(parent: HTMLElement, initial: string, label: string): QueryEditor {
  let fields: readonly string[] = [];
  const complete = (context: CompletionContext): CompletionResult | null => {
    const word = context.matchBefore(/"[\w.@]*/);
    if (!word || (word.from === word.to && !context.explicit)) return null;
    return { from: word.from + 1, options: fields.map((f) => ({ label: f, type: "property" })), validFor: /^[\w.@]*$/ };
  };
  // In a shadow root: CodeMirror's style module then uses a constructed style sheet
  // (adoptedStyleSheets), which the console's CSP allows; on a document it would add a <style> element.
  const shadow = parent.shadowRoot ?? parent.attachShadow({ mode: "open" });
  const view = new EditorView({
    doc: initial,
    parent: shadow,
    root: shadow,
    extensions: [
      // Wrapped lines and no height cap: the editor never scrolls by itself (a scrolling region would
      // need its own focus stop, axe-core's scrollable-region-focusable).
      EditorView.theme({ "&": { minHeight: "10rem", fontSize: "14px" } }),
      EditorView.lineWrapping,
      basicSetup,
      json(),
      jsonLanguage.data.of({ autocomplete: complete }),
      autocompletion({ activateOnTyping: true }),
      EditorView.contentAttributes.of({ "aria-label": label }),
    ],
  });
  return {
    text: () => view.state.doc.toString(),
    setText: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    setFields: (f) => {
      fields = f;
    },
    destroy: () => view.destroy(),
  };
}
