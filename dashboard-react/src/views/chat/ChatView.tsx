import { useEffect, useMemo, useState, type FormEvent, type KeyboardEvent } from "react";
import { api } from "../../api/client";
import { ErrorNote } from "../../components/ErrorNote";
import { useChat } from "../../hooks/useChat";
import { usePoll } from "../../hooks/usePoll";
import { Transcript } from "./Transcript";

export function ChatView() {
  const models = usePoll(api.models, 10000);
  const [model, setModel] = useState("");
  const [maxTokens, setMaxTokens] = useState(256);
  const [temperature, setTemperature] = useState(1);
  const [draft, setDraft] = useState("");
  const settings = useMemo(() => ({ maxTokens, temperature }), [maxTokens, temperature]);
  const chat = useChat(model, settings);
  const ids = models.data?.data.map((m) => m.id) ?? [];

  useEffect(() => {
    if (!model && ids.length > 0) {
      const running = models.data!.data.find((m) => m.running_instances > 0);
      setModel(running?.id ?? ids[0]!);
    }
  }, [model, ids, models.data]);

  const submit = (event?: FormEvent) => {
    event?.preventDefault();
    const text = draft.trim();
    if (!text || !model || chat.streaming) return;
    setDraft("");
    void chat.send(text);
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey) submit(event);
  };

  return (
    <section aria-labelledby="chat-title" className="chat">
      <h2 id="chat-title">Chat</h2>
      <ErrorNote error={models.error} what="list the models" />
      <div className="row controls">
        <label htmlFor="chat-model">Model</label>
        <select id="chat-model" value={model} onChange={(e) => setModel(e.target.value)} disabled={chat.streaming}>
          {ids.map((id) => <option key={id} value={id}>{id}</option>)}
        </select>
        <label htmlFor="chat-max">Max tokens</label>
        <input id="chat-max" type="number" min={1} max={8192} value={maxTokens}
          onChange={(e) => setMaxTokens(Math.max(1, Number(e.target.value) || 1))} />
        <label htmlFor="chat-temperature" title="0 is greedy: the same prompt gets the same reply">Temperature</label>
        <input id="chat-temperature" type="number" min={0} max={2} step={0.1} value={temperature}
          onChange={(e) => setTemperature(Math.min(2, Math.max(0, Number(e.target.value) || 0)))} />
        <button type="button" className="ghost" onClick={chat.clear} disabled={chat.streaming}>New conversation</button>
      </div>
      <Transcript turns={chat.turns} />
      <form className="composer" onSubmit={submit}>
        <label htmlFor="chat-input" className="sr-only">Message</label>
        <textarea id="chat-input" rows={3} value={draft} placeholder="Message (Enter sends, Shift+Enter for a new line)"
          onChange={(e) => setDraft(e.target.value)} onKeyDown={onKeyDown} />
        {chat.streaming
          ? <button type="button" className="danger" onClick={() => void chat.stop()}>Stop</button>
          : <button type="submit" disabled={!draft.trim() || !model}>Send</button>}
      </form>
    </section>
  );
}
