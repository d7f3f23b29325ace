/**
 * The issues of a zod error (how the SDK reports an answer that breaks MCP's schema), the first
 * three of them, as `path: message`; `undefined` for any other error.
 */
export function schemaIssuesOf(error: unknown): string | undefined {
  const issues = (error as { issues?: unknown } | null)?.issues;
  if (!Array.isArray(issues) || issues.length === 0) return undefined;
  const told = issues.slice(0, 3).map((issue: { path?: unknown; message?: unknown }) => {
    const path = Array.isArray(issue.path)
      ? issue.path
          .map((key) => (typeof key === "number" ? `[${key}]` : `.${String(key)}`))
          .join("")
          .replace(/^\./, "")
      : "";
    return `${path === "" ? "" : `${path}: `}${String(issue.message)}`;
  });
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : "";
  return `${told.join("; ")}${more}`;
}
