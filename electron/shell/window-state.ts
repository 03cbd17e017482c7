// Where the window was and whether it was maximized, remembered across launches.
import * as z from 'zod';

const rectangle = z.object({ x: z.number().int(), y: z.number().int(), width: z.number().int().min(1), height: z.number().int().min(1) });
export type Rectangle = z.infer<typeof rectangle>;

export const windowStateSchema = z.object({ bounds: rectangle.optional(), maximized: z.boolean() });
export type WindowState = z.infer<typeof windowStateSchema>;

export const DEFAULT_WINDOW_STATE: WindowState = { maximized: false };
export const DEFAULT_SIZE = { width: 1200, height: 800 } as const;
export const MIN_SIZE = { width: 720, height: 480 } as const;

/**
 * The remembered bounds if enough of the window (its top-left 100x40 title area) falls on a current display,
 * else undefined so the OS centres a default-size window: a monitor may have been unplugged since.
 */
export function visibleBounds(bounds: Rectangle | undefined, workAreas: readonly Rectangle[]): Rectangle | undefined {
  if (!bounds) return undefined;
  const grip = { x: bounds.x, y: bounds.y, width: Math.min(100, bounds.width), height: Math.min(40, bounds.height) };
  return workAreas.some((area) => contains(area, grip))
    ? { ...bounds, width: Math.max(bounds.width, MIN_SIZE.width), height: Math.max(bounds.height, MIN_SIZE.height) }
    : undefined;
}

function contains(outer: Rectangle, inner: Rectangle): boolean {
  return (
    inner.x >= outer.x &&
    inner.y >= outer.y &&
    inner.x + inner.width <= outer.x + outer.width &&
    inner.y + inner.height <= outer.y + outer.height
  );
}
