import { describe, expect, it } from "vitest";
import type { PlacementPreview } from "../api/types";
import { catalogueRows, describePreview, nodeVerdicts, placeRequestFor, rankPreviews } from "./models";
import { placementFits } from "../test-fixtures";

function preview(engine: string, sharding: string, width: number, fits: boolean): PlacementPreview {
  return { engine, sharding, width, fits, reason: fits ? null : "no", nodes: [] };
}

describe("catalogue", () => {
  it("joins the model list with sizes, formats and per-node verdicts", () => {
    const [row] = catalogueRows([{
      id: "smollm2-135m", aliases: ["SmolLM2"], context_length: 8192,
      available_formats: ["gguf"], running_instances: 1, status: "running", held_by: ["node-a"],
    }], placementFits());
    expect(row!.sizeBytes).toBe(98_362_432);
    expect(row!.formats.map((f) => [f.format, f.onThisNode])).toEqual([["gguf", true], ["mlx", false]]);
    expect(row!.weights).toEqual({ status: "running", heldBy: ["node-a"], label: "on disk: node-a" });
    expect(row!.nodes).toEqual([
      { nodeId: "node-a", fits: true, engine: "llama_cpp", detail: "fits with llama_cpp",
        weights: "weights on its disk" },
      { nodeId: "node-b", fits: false, engine: null, detail: "runs no worker",
        weights: "weights copied from node-a" },
    ]);
  });

  it("says a model whose weights no node holds needs a download, on every node", () => {
    const [row] = catalogueRows([{ id: "qwen3-8b", aliases: [], context_length: 1, available_formats: [],
      running_instances: 0, status: "download", held_by: [] }], {
      ...placementFits(), models: [{ ...placementFits().models[0]!, model_id: "qwen3-8b" }] });
    expect(row!.weights.label).toBe("needs a download");
    expect(row!.nodes.map((v) => [v.fits, v.weights])).toEqual([
      [true, "weights need a download"], [false, "weights need a download"]]);
  });

  it("still lists a model whose fits are not known yet", () => {
    const [row] = catalogueRows([{ id: "m", aliases: [], context_length: 1, available_formats: [],
      running_instances: 0, status: "held", held_by: ["node-b"] }], null);
    expect(row!.sizeBytes).toBeNull();
    expect(row!.nodes).toEqual([]);
  });

  it("gives every reason when no engine fits", () => {
    const [verdict] = nodeVerdicts(placementFits().models[0]!.fits.map((f) => ({ ...f, fits: false,
      reason: f.reason ?? "llama_cpp whole needs 2 GiB" })));
    expect(verdict!.detail).toBe("llama_cpp whole needs 2 GiB; mlx whole needs 1.5 GiB, has 1.0 GiB usable");
  });
});

describe("placement candidates", () => {
  it("puts fitting candidates first, narrowest first, keeping engine preference", () => {
    const ranked = rankPreviews([
      preview("llama_cpp", "pipeline", 1, false), preview("mlx", "pipeline", 1, true),
      preview("mlx", "tensor", 1, true), preview("mlx", "pipeline", 2, true),
    ]);
    expect(ranked.map(describePreview)).toEqual([
      "mlx, whole, 1 node", "mlx, tensor, 1 node", "mlx, pipeline, 2 nodes", "llama_cpp, whole, 1 node"]);
  });

  it("turns a candidate into the place request that asks for it", () => {
    expect(placeRequestFor("smollm2-135m", preview("mlx", "pipeline", 3, true))).toEqual({
      model_id: "smollm2-135m", engine: "mlx", sharding: "pipeline", min_nodes: 3 });
  });
});
