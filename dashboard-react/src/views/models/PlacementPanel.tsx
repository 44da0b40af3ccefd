import { useEffect, useState } from "react";
import { api } from "../../api/client";
import type { InstanceView, PlacementPreviews } from "../../api/types";
import { ErrorNote } from "../../components/ErrorNote";
import { RankProgressList } from "../../components/RankProgressList";
import { StatusBadge } from "../../components/StatusBadge";
import { useClusterData } from "../../hooks/ClusterData";
import { placeRequestFor, previewKey, rankPreviews } from "../../state/models";
import { CandidateList } from "./CandidateList";

interface Props {
  modelId: string;
  onClose: () => void;
}

/** Shows where a model could go, places it on confirmation, then follows it to ready. */
export function PlacementPanel({ modelId, onClose }: Props) {
  const { cluster, refresh } = useClusterData();
  const [previews, setPreviews] = useState<PlacementPreviews | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [placed, setPlaced] = useState<InstanceView | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);

  useEffect(() => {
    let current = true;
    api.previews(modelId).then((answer) => {
      if (!current) return;
      setPreviews(answer);
      const first = rankPreviews(answer.previews).find((p) => p.fits);
      setSelected(first ? previewKey(first) : null);
    }, (caught: Error) => current && setError(caught));
    return () => { current = false; };
  }, [modelId]);

  const ranked = previews ? rankPreviews(previews.previews) : [];
  const choice = ranked.find((p) => previewKey(p) === selected) ?? null;
  const live = placed ? cluster?.instances.find((i) => i.instance_id === placed.instance_id) ?? placed : null;

  const confirm = async () => {
    if (!choice) return;
    setBusy(true);
    setError(null);
    try {
      setPlaced(await api.place(placeRequestFor(modelId, choice)));
      refresh();
    } catch (caught) {
      setError(caught as Error);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="panel placement" aria-labelledby="placement-title">
      <header className="card-head">
        <h3 id="placement-title">Place {modelId}</h3>
        <button type="button" className="ghost" onClick={onClose}>Close</button>
      </header>
      <ErrorNote error={error} what="place the model" />
      {!previews && !error && <p className="muted">Computing candidate placements…</p>}
      {previews && previews.waiting_for.length > 0 && (
        <p className="muted">Still waiting for memory readings from {previews.waiting_for.join(", ")}.</p>
      )}
      {previews && !live && (
        <>
          <CandidateList previews={ranked} selected={selected} onSelect={setSelected} />
          <button type="button" onClick={confirm} disabled={!choice || busy}>
            {busy ? "Placing…" : "Confirm placement"}
          </button>
        </>
      )}
      {live && (
        <div className="placed" data-instance={live.instance_id}>
          <p role="status">
            Instance <code>{live.instance_id}</code>: <StatusBadge status={live.status} />
            {live.status === "ready" ? " — serving requests." : ""}
          </p>
          <RankProgressList ranks={live.ranks} />
        </div>
      )}
    </section>
  );
}
