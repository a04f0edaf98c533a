// What the core benches share: how much a stretch of work stalls the event loop (the event-loop
// delay histogram, the longest gap between 5 ms ticks (minus the 5 ms), the most CPU the process
// used between two ticks, and the peak RSS, sampled every 20 ms), and the replies of their models.
import { monitorEventLoopDelay } from "node:perf_hooks";

/** Starts measuring; `stop()` ends it and returns the figures. */
export function stallMeter() {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  // A second, plain measure: the longest gap between 5 ms ticks, minus the 5 ms.
  let lastTick = performance.now();
  let maxGapMs = 0;
  // CPU this process used between two ticks: on a loaded machine a gap is mostly waiting for a
  // core, so this is the closer measure of how long one synchronous stretch computed.
  let lastCpu = process.cpuUsage();
  let maxCpuMs = 0;
  const cpuSince = (cpu) => (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000;
  const ticker = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - lastTick - 5);
    lastTick = now;
    const cpu = process.cpuUsage();
    maxCpuMs = Math.max(maxCpuMs, cpuSince(cpu));
    lastCpu = cpu;
  }, 5);
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 20);
  histogram.enable();
  return {
    stop() {
      histogram.disable();
      clearInterval(sampler);
      clearInterval(ticker);
      maxGapMs = Math.max(maxGapMs, performance.now() - lastTick - 5);
      maxCpuMs = Math.max(maxCpuMs, cpuSince(process.cpuUsage()));
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      return {
        maxCpuMs,
        // The histogram reads 0 when its timer never fired inside the window; the tick gap then speaks.
        maxStallMs: Math.max(histogram.count > 0 ? histogram.max / 1e6 : 0, maxGapMs),
        p99StallMs: histogram.count > 0 ? histogram.percentile(99) / 1e6 : Number.NaN,
        peakRssMb: peakRss / 2 ** 20,
      };
    },
  };
}

/**
 * A Messages API reply as a bench model returns it: message `msg_<index>` with `content`,
 * stopping for a tool when `toolTurn`.
 */
export function messageOf(index, content, toolTurn, usage) {
  return {
    id: `msg_${index}`,
    type: "message",
    role: "assistant",
    model: "claude-sonnet-5-5",
    content,
    stop_reason: toolTurn ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage,
  };
}
