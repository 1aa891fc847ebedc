/**
 * The query editor: CodeMirror 6 with JSON highlighting, bracket matching, lint-free editing and
 * completion of field names (inside a JSON string) from the record kinds' mapping.
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
  const view = new EditorView({
    doc: initial,
    parent,
    extensions: [
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
