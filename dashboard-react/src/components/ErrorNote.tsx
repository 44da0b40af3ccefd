export function ErrorNote({ error, what }: { error: Error | null | undefined; what: string }) {
  if (!error) return null;
  return (
    <p role="alert" className="error-note">
      Could not {what}: {error.message}
    </p>
  );
}
