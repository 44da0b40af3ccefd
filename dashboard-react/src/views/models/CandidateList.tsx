import type { PlacementPreview } from "../../api/types";
import { formatBytes, formatLayers } from "../../state/format";
import { describePreview, previewKey } from "../../state/models";

interface Props {
  previews: PlacementPreview[];
  selected: string | null;
  onSelect: (key: string) => void;
}

/** What a prediction assumed, for its tooltip. */
function predictionNote(preview: PlacementPreview): string {
  const assumed = preview.prediction_assumes ?? [];
  return "one stream's decode speed, predicted from the nodes' measured decode speeds and links"
    + (assumed.length ? `; assumed ${assumed.join(", ")}` : "");
}

/** The candidate placements to choose from, each with its ranks' layers and memory, each
 * one's predicted decode speed, and which one a placement with the defaults takes. */
export function CandidateList({ previews, selected, onSelect }: Props) {
  return (
    <fieldset className="candidates">
      <legend>Candidate placements</legend>
      {previews.map((preview) => {
        const key = previewKey(preview);
        const id = `candidate-${key.replace(/\W/g, "-")}`;
        return (
          <div key={key} className={`candidate ${preview.fits ? "" : "impossible"}`}>
            <input type="radio" name="candidate" id={id} value={key} checked={selected === key}
              disabled={!preview.fits} onChange={() => onSelect(key)} />
            <label htmlFor={id}>
              <strong>{describePreview(preview)}</strong>
              {preview.predicted_decode_tps != null && (
                <span className="muted small" title={predictionNote(preview)}>
                  {" "}— ~{preview.predicted_decode_tps.toPrecision(3)} tokens/s predicted
                </span>
              )}
              {preview.placed_by_default && (
                <span className="small"> — what placing it with the defaults takes</span>
              )}
              {!preview.fits && <span className="muted small"> — {preview.reason}</span>}
            </label>
            {preview.nodes.length > 0 && (
              <table className="compact">
                <caption className="sr-only">Ranks of {describePreview(preview)}</caption>
                <thead>
                  <tr><th scope="col">Rank</th><th scope="col">Node</th><th scope="col">Layers</th><th scope="col">Memory needed / usable</th></tr>
                </thead>
                <tbody>
                  {preview.nodes.map((rank) => (
                    <tr key={rank.rank} className={rank.fits ? "" : "no-fit"}>
                      <td>{rank.rank}</td>
                      <td>{rank.node_id}</td>
                      <td>{formatLayers(rank.start_layer, rank.end_layer)}</td>
                      <td>{formatBytes(rank.needed_bytes)} / {formatBytes(rank.usable_bytes)}{rank.fits ? "" : " (too little)"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
        );
      })}
    </fieldset>
  );
}
