export interface BenchFigure {
  name: string;
  value: number;
  unit: string;
  /** The goal; the figure passes when value <= goal. */
  goal: number;
  /** What the figure was measured against, in a few words. */
  note?: string;
}

/** Median of a non-empty list. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
