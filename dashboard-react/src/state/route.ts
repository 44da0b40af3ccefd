// Which view is open: kept in the URL's hash, so a view can be linked and reloaded.

export const VIEWS = ["cluster", "models", "instances", "chat", "traces", "events"] as const;
export type View = (typeof VIEWS)[number];

export const VIEW_TITLES: Record<View, string> = {
  cluster: "Cluster",
  models: "Models",
  instances: "Instances",
  chat: "Chat",
  traces: "Traces",
  events: "Events",
};

export function viewFromHash(hash: string): View {
  const name = hash.replace(/^#\/?/, "").split(/[/?]/)[0] ?? "";
  return (VIEWS as readonly string[]).includes(name) ? (name as View) : "cluster";
}

export function hashFor(view: View): string {
  return `#/${view}`;
}
