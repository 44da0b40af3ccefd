// The catalogue with where its weights are and per-node fit, and the candidate placements
// of a model.

import type {
  ModelEntry,
  ModelFits,
  ModelStatus,
  NodeFit,
  PlacementFits,
  PlacementPreview,
  PlaceRequest,
} from "../api/types";

export interface NodeVerdict {
  nodeId: string;
  fits: boolean;
  // The engine that would hold the model there, or the reason none can.
  engine: string | null;
  detail: string;
  // Where that node would get the weights: its own disk, a peer's, or a download.
  weights?: string;
}

export interface WeightsVerdict {
  status: ModelStatus;
  heldBy: string[];
  label: string;
}

export interface CatalogueRow {
  id: string;
  aliases: string[];
  contextLength: number;
  sizeBytes: number | null;
  formats: { format: string; sizeBytes: number; onThisNode: boolean }[];
  runningInstances: number;
  weights: WeightsVerdict;
  nodes: NodeVerdict[];
}

/** Whether the weights exist anywhere in the cluster: fitting in memory says nothing
 * about that. */
export function weightsVerdict(model: ModelEntry): WeightsVerdict {
  const heldBy = model.held_by;
  const label = heldBy.length ? `on disk: ${heldBy.join(", ")}` : "needs a download";
  return { status: model.status, heldBy, label };
}

/** Where `nodeId` would read the weights from if the model were placed there. */
export function weightsOn(nodeId: string, heldBy: string[]): string {
  if (heldBy.includes(nodeId)) return "weights on its disk";
  if (heldBy.length) return `weights copied from ${heldBy[0]}`;
  return "weights need a download";
}

/** Per node: the first engine (in preference order) that fits whole, else why none does. */
export function nodeVerdicts(fits: NodeFit[]): NodeVerdict[] {
  const byNode = new Map<string, NodeFit[]>();
  for (const fit of fits) byNode.set(fit.node_id, [...(byNode.get(fit.node_id) ?? []), fit]);
  return [...byNode.entries()].map(([nodeId, options]) => {
    const fitting = options.find((o) => o.fits);
    if (fitting) return { nodeId, fits: true, engine: fitting.engine, detail: `fits with ${fitting.engine}` };
    const reasons = [...new Set(options.map((o) => o.reason ?? `${o.engine} does not fit`))];
    return { nodeId, fits: false, engine: null, detail: reasons.join("; ") };
  });
}

export function catalogueRows(models: ModelEntry[], fits: PlacementFits | null): CatalogueRow[] {
  const byId = new Map<string, ModelFits>((fits?.models ?? []).map((m) => [m.model_id, m]));
  return models.map((model) => {
    const fit = byId.get(model.id);
    const weights = weightsVerdict(model);
    return {
      id: model.id,
      aliases: model.aliases,
      contextLength: model.context_length,
      sizeBytes: fit?.size_bytes ?? null,
      formats: (fit?.sources ?? []).map((s) => ({ format: s.format, sizeBytes: s.size_bytes, onThisNode: s.on_this_node })),
      runningInstances: model.running_instances,
      weights,
      nodes: fit ? nodeVerdicts(fit.fits).map((v) => ({ ...v, weights: weightsOn(v.nodeId, weights.heldBy) })) : [],
    };
  });
}

export function previewKey(preview: PlacementPreview): string {
  return `${preview.engine}/${preview.sharding}/${preview.width}`;
}

/** Fitting candidates first, narrowest first; then the ones that cannot be placed. Within
 * a width the node's own order (engine preference) is kept. */
export function rankPreviews(previews: PlacementPreview[]): PlacementPreview[] {
  return previews
    .map((preview, order) => ({ preview, order }))
    .sort((x, y) =>
      Number(y.preview.fits) - Number(x.preview.fits) || x.preview.width - y.preview.width || x.order - y.order)
    .map(({ preview }) => preview);
}

export function placeRequestFor(modelId: string, preview: PlacementPreview): PlaceRequest {
  return { model_id: modelId, engine: preview.engine, sharding: preview.sharding, min_nodes: preview.width };
}

export function describePreview(preview: PlacementPreview): string {
  const where = preview.width === 1 ? "1 node" : `${preview.width} nodes`;
  const how = preview.width === 1 && preview.sharding === "pipeline" ? "whole" : preview.sharding;
  return `${preview.engine}, ${how}, ${where}`;
}
