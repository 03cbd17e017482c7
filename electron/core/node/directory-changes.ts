// Changes to the backends directory that Hangar did not make (LocalAI installing or upgrading, a person's `cp -a` or
// `rm -rf`) reach every viewer the way its own swaps do: each name fs.watch reports is published once its burst of
// events has settled. A name Hangar is swapping is left to the swap, which publishes its own result.
const SETTLE_MS = 20;

export class DirectoryChanges {
  private readonly names = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly publish: (name: string) => Promise<void>,
    private readonly swapping: (name: string) => boolean,
  ) {}

  heard(name: string): void {
    if (this.closed || this.swapping(name)) return;
    this.names.add(name);
    this.timer ??= setTimeout(() => this.flush(), SETTLE_MS);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.names.clear();
  }

  private flush(): void {
    this.timer = null;
    const names = [...this.names];
    this.names.clear();
    // A name that is gone, or not a backend's, publishes its removal; a failed read is the next listing's to show.
    for (const name of names) void this.publish(name).catch(() => undefined);
  }
}
