// A tooltip shown in the browser's top layer (a manual popover) while its anchor is hovered or holds focus: no table's
// scrolling box or sticky column clips or covers it, and it is kept inside the window, below its anchor or above it.
import { useLayoutEffect, useRef, useState, type FocusEvent, type KeyboardEvent } from 'react';

const GAP_PX = 6;
const MARGIN_PX = 8;

function place(tip: HTMLElement, anchor: HTMLElement): void {
  const at = anchor.getBoundingClientRect();
  const { width, height } = tip.getBoundingClientRect();
  const below = at.bottom + GAP_PX;
  const top = below + height <= window.innerHeight - MARGIN_PX ? below : at.top - GAP_PX - height;
  tip.style.left = `${Math.max(MARGIN_PX, Math.min(at.left, window.innerWidth - width - MARGIN_PX))}px`;
  tip.style.top = `${Math.max(MARGIN_PX, top)}px`;
}

/** Spread `anchorProps` on the anchor and `tipProps` on the tooltip inside it; Escape hides it until the next hover or focus. */
export function useTopLayerTip<Anchor extends HTMLElement, Tip extends HTMLElement>() {
  const anchor = useRef<Anchor>(null);
  const tip = useRef<Tip>(null);
  const [hovered, setHovered] = useState(false);
  const [focused, setFocused] = useState(false);
  const open = hovered || focused;
  useLayoutEffect(() => {
    const shown = tip.current;
    const by = anchor.current;
    if (!open || !shown || !by) return;
    if (!shown.matches(':popover-open')) shown.showPopover();
    const follow = () => place(shown, by);
    follow();
    window.addEventListener('scroll', follow, true);
    window.addEventListener('resize', follow);
    return () => {
      window.removeEventListener('scroll', follow, true);
      window.removeEventListener('resize', follow);
      if (shown.matches(':popover-open')) shown.hidePopover();
    };
  }, [open]);
  return {
    anchorProps: {
      ref: anchor,
      onMouseEnter: () => setHovered(true),
      onMouseLeave: () => setHovered(false),
      onFocus: () => setFocused(true),
      onBlur: (e: FocusEvent) => setFocused(e.currentTarget.contains(e.relatedTarget)),
      onKeyDown: (e: KeyboardEvent) => {
        if (e.key !== 'Escape' || !open) return;
        e.stopPropagation();
        setHovered(false);
        setFocused(false);
      },
    },
    tipProps: { ref: tip, popover: 'manual' as const },
  };
}
