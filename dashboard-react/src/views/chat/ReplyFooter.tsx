import type { ChatTurn } from "../../state/chat";
import { formatMs, formatRate } from "../../state/format";

const ENDINGS: Record<string, string> = { done: "", stopped: "stopped", error: "failed", streaming: "streaming…" };

/** Under a reply: its figures, how it ended, and the raw exchange when asked for. */
export function ReplyFooter({ turn }: { turn: ChatTurn }) {
  const m = turn.metrics;
  return (
    <div className="reply-footer">
      <p className="metrics" data-testid="reply-metrics">
        {turn.state && ENDINGS[turn.state] && <span className={`ending ending-${turn.state}`}>{ENDINGS[turn.state]}</span>}
        {m && (
          <>
            <span>TTFT {formatMs(m.ttftMs)}</span>
            <span>{formatRate(m.tokensPerSecond)}</span>
            <span>{m.completionTokens} tokens</span>
            {turn.finishReason && <span>finish: {turn.finishReason}</span>}
          </>
        )}
      </p>
      {turn.error && <p role="alert" className="error-note">{turn.error}</p>}
      {turn.raw && (
        <details className="raw">
          <summary>Raw request and response</summary>
          <h4>Request{turn.commandId ? ` (command ${turn.commandId})` : ""}</h4>
          <pre>{JSON.stringify(turn.raw.request, null, 2)}</pre>
          <h4>Response ({turn.raw.response.length} server-sent events)</h4>
          <pre>{turn.raw.response.map((d) => `data: ${d}`).join("\n")}</pre>
        </details>
      )}
    </div>
  );
}
