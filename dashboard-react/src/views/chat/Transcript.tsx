import type { ChatTurn } from "../../state/chat";
import { ReplyFooter } from "./ReplyFooter";

export function Transcript({ turns }: { turns: ChatTurn[] }) {
  if (turns.length === 0) return <p className="muted">Say something to the model.</p>;
  return (
    <ol className="transcript" aria-label="Conversation" aria-live="polite">
      {turns.map((turn, i) => (
        <li key={i} className={`turn turn-${turn.role}`} data-state={turn.state ?? ""}>
          <span className="who">{turn.role === "user" ? "You" : "Model"}</span>
          <div className="content">{turn.content || (turn.state === "streaming" ? "…" : "")}</div>
          {turn.role === "assistant" && <ReplyFooter turn={turn} />}
        </li>
      ))}
    </ol>
  );
}
