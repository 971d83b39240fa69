// What the spec/sdk_server servers share: the slow tool's body.
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Steps with progress until done or signal aborts (it says so on stderr).
export async function slow({ steps = 400, delay = 0.05, tag = "-" }, signal, token, notify) {
  let aborted = false;
  signal.addEventListener("abort", () => {
    aborted = true;
    console.error(`sdk: slow aborted ${tag}`);
  });
  console.error(`sdk: slow started ${tag}`);
  for (let i = 1; i <= steps && !aborted; i++) {
    if (token !== undefined) {
      await notify({ method: "notifications/progress",
                     params: { progressToken: token, progress: i, total: steps, message: `step ${i}` } })
        .catch(() => {});
    }
    await sleep(delay * 1000);
  }
  return { content: [{ type: "text", text: aborted ? `stopped ${tag}` : `done ${tag}` }] };
}
