import { useState } from "react";
import { api } from "../../api/client";
import { ErrorNote } from "../../components/ErrorNote";
import { usePoll } from "../../hooks/usePoll";
import { catalogueRows } from "../../state/models";
import { CatalogueTable } from "./CatalogueTable";
import { PlacementPanel } from "./PlacementPanel";
import { ModelInstances } from "./ModelInstances";
import { Downloads } from "./Downloads";

const CATALOGUE_POLL_MS = 5000;

export function ModelsView() {
  const models = usePoll(api.catalogue, CATALOGUE_POLL_MS);
  const fits = usePoll(api.fits, CATALOGUE_POLL_MS);
  const [placing, setPlacing] = useState<string | null>(null);
  const rows = models.data ? catalogueRows(models.data.data, fits.data) : [];
  return (
    <section aria-labelledby="models-title">
      <h2 id="models-title">Models</h2>
      <ErrorNote error={models.error ?? fits.error} what="read the catalogue" />
      {fits.data && fits.data.waiting_for.length > 0 && (
        <p className="muted">Waiting for memory readings from {fits.data.waiting_for.join(", ")}.</p>
      )}
      {models.data ? <CatalogueTable rows={rows} onPlace={setPlacing} /> : <p className="muted">Reading the catalogue…</p>}
      {placing && <PlacementPanel key={placing} modelId={placing} onClose={() => setPlacing(null)} />}
      <Downloads />
      <ModelInstances />
    </section>
  );
}
