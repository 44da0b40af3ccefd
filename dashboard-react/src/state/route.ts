// Which view is open: kept in the URL's hash, so a view can be linked and reloaded. The
// node also serves the page at a view's path (`/models`, not `/cluster` or `/events`,
// which are API routes); the page then moves that path into the hash.

export const VIEWS = ["cluster", "charts", "models", "instances", "chat", "traces", "events"] as const;
export type View = (typeof VIEWS)[number];

export const VIEW_TITLES: Record<View, string> = {
  cluster: "Cluster",
  charts: "Charts",
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

/** The hash a page opened at a view's path (`/chat?model=x`) should have instead, or null
 * when the path names no view or the hash already says which view is open. */
export function hashForPath(pathname: string, search: string, hash: string): string | null {
  if (hash.replace(/^#\/?/, "")) return null;
  const name = pathname.replace(/^\/+|\/+$/g, "");
  return (VIEWS as readonly string[]).includes(name) ? `${hashFor(name as View)}${search}` : null;
}
