import { useState, type FormEvent } from "react";
import { KEY_STORAGE } from "../api/client";

/** Asks for the API key when the node wants one; it is kept in this browser only. */
export function KeyPrompt({ onSaved }: { onSaved: () => void }) {
  const [key, setKey] = useState("");
  const save = (event: FormEvent) => {
    event.preventDefault();
    localStorage.setItem(KEY_STORAGE, key.trim());
    onSaved();
  };
  return (
    <form className="panel key-prompt" onSubmit={save} aria-labelledby="key-title">
      <h2 id="key-title">This node wants an API key</h2>
      <p>It was started with <code>--api-key</code>. The key is kept in this browser only.</p>
      <label htmlFor="api-key">API key</label>
      <div className="row">
        <input id="api-key" type="password" autoComplete="off" value={key} onChange={(e) => setKey(e.target.value)} />
        <button type="submit" disabled={!key.trim()}>Use key</button>
      </div>
    </form>
  );
}
