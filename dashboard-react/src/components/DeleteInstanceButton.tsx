import { useState } from "react";
import { api } from "../api/client";
import { ErrorNote } from "./ErrorNote";

/** Deletes an instance after a second click, so one stray click removes nothing. */
export function DeleteInstanceButton({ instanceId, onDeleted }: { instanceId: string; onDeleted: () => void }) {
  const [armed, setArmed] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const click = async () => {
    if (!armed) {
      setArmed(true);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await api.deleteInstance(instanceId);
      onDeleted();
    } catch (caught) {
      setError(caught as Error);
    } finally {
      setBusy(false);
      setArmed(false);
    }
  };
  return (
    <span className="delete-instance">
      <button type="button" className={armed ? "danger" : "secondary"} onClick={click} disabled={busy}
        aria-label={armed ? `Confirm: delete instance ${instanceId}` : `Delete instance ${instanceId}`}>
        {busy ? "Deleting…" : armed ? "Confirm delete" : "Delete"}
      </button>
      {armed && !busy && <button type="button" className="ghost" onClick={() => setArmed(false)}>Keep</button>}
      <ErrorNote error={error} what="delete the instance" />
    </span>
  );
}
