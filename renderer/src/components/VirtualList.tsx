import { useVirtualizer } from '@tanstack/react-virtual';
import { useRef } from 'react';
import type { ReactNode } from 'react';

interface VirtualListProps<T> {
  items: readonly T[];
  getKey: (item: T) => string;
  renderItem: (item: T) => ReactNode;
  /** A first guess at an item's height; real heights are measured. */
  estimateSize: number;
  label: string;
}

/** A scrolling list that mounts only the items in view, so hundreds of rows cost what a screenful does. */
export function VirtualList<T>({ items, getKey, renderItem, estimateSize, label }: VirtualListProps<T>) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: items.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => estimateSize,
    getItemKey: (index) => getKey(items[index]!),
    overscan: 4,
    gap: 12,
    paddingStart: 4,
    paddingEnd: 24,
  });
  return (
    <div ref={scrollRef} className="vlist" role="list" aria-label={label}>
      <div className="vlist-inner" style={{ height: virtualizer.getTotalSize() }}>
        {virtualizer.getVirtualItems().map((row) => (
          <div
            key={row.key}
            ref={virtualizer.measureElement}
            data-index={row.index}
            role="listitem"
            className="vlist-item"
            style={{ transform: `translateY(${row.start}px)` }}
          >
            {renderItem(items[row.index]!)}
          </div>
        ))}
      </div>
    </div>
  );
}
