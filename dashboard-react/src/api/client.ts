// One way to call the node that served this page: same origin, the API key when one is set,
// errors turned into ApiError with the node's own message.

import type {
  ChromeTrace,
  ClusterState,
  ClusterSummary,
  ClusterTraces,
  InstanceView,
  ModelList,
  PlacementFits,
  PlacementPreviews,
  PlaceRequest,
  RecentEvents,
} from "./types";

export const KEY_STORAGE = "skulk.apiKey";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }

  get needsKey(): boolean {
    return this.status === 401;
  }
}

/** The error message inside any of the API's dialect error bodies, or the status text. */
export function errorMessage(body: unknown, fallback: string): string {
  if (body && typeof body === "object" && "error" in body) {
    const error = (body as { error: unknown }).error;
    if (typeof error === "string") return error;
    if (error && typeof error === "object" && "message" in error) {
      const message = (error as { message: unknown }).message;
      if (typeof message === "string") return message;
    }
  }
  if (body && typeof body === "object" && "detail" in body) {
    return JSON.stringify((body as { detail: unknown }).detail);
  }
  return fallback;
}

export function storedKey(storage: Storage | undefined = globalThis.localStorage): string {
  return storage?.getItem(KEY_STORAGE) ?? "";
}

export function authHeaders(key: string): Record<string, string> {
  return key ? { Authorization: `Bearer ${key}` } : {};
}

export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = { ...authHeaders(storedKey()), ...(init.headers as Record<string, string>) };
  const response = await fetch(path, { ...init, headers });
  if (!response.ok) {
    const body: unknown = await response.json().catch(() => null);
    throw new ApiError(response.status, errorMessage(body, `${response.status} ${response.statusText}`));
  }
  return response;
}

async function json<T>(path: string, init: RequestInit = {}): Promise<T> {
  return (await (await request(path, init)).json()) as T;
}

function post<T>(path: string, body: unknown): Promise<T> {
  return json<T>(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

const q = encodeURIComponent;

export const api = {
  state: () => json<ClusterState>("/state"),
  cluster: () => json<ClusterSummary>("/cluster"),
  /** The models the cluster can answer now: running or held on some node's disk. */
  models: () => json<ModelList>("/v1/models"),
  /** Every catalogue card, those that need a download too. */
  catalogue: () => json<ModelList>("/v1/models?all=true"),
  fits: () => json<PlacementFits>("/placement/fits"),
  previews: (modelId: string) => json<PlacementPreviews>(`/instance/previews?model_id=${q(modelId)}`),
  place: (body: PlaceRequest) => post<InstanceView>("/place_instance", body),
  instance: (id: string) => json<InstanceView>(`/instance/${q(id)}`),
  deleteInstance: (id: string) => json<{ deleted: string }>(`/instance/${q(id)}`, { method: "DELETE" }),
  cancel: (commandId: string) => post<{ cancelled: string }>(`/v1/cancel/${q(commandId)}`, {}),
  tracing: () => json<{ enabled: boolean }>("/v1/tracing"),
  setTracing: (enabled: boolean) => post<{ enabled: boolean }>("/v1/tracing", { enabled }),
  traces: () => json<ClusterTraces>("/v1/cluster/traces"),
  trace: (id: string) => json<ChromeTrace>(`/v1/cluster/traces/${q(id)}`),
  events: (afterSeq: number) => json<RecentEvents>(`/events?after_seq=${afterSeq}&limit=1000`),
};
