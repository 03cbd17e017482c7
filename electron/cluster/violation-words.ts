// What a host says on stderr of what the NATS server refused it. The server reports a refusal per message, and a host
// whose credential is not its own (another machine's, or one made before its key changed) is refused its heartbeat,
// its call subject, its status and each request's inbox, over and over: that is said once, with what to do about it.

/** The server's line with each request's own inbox token made one: every refusal of the host's inbox counts as one. */
export function violationLine(message: string): string {
  const line = message.replace(/\s+/g, ' ').slice(0, 300);
  return line.replace(/"(_INBOX[^"]*)"/g, (_whole, subject: string) => `"${subject.replace(/(^|\.)[A-Za-z0-9]{22}(?=\.|$)/g, '$1*')}"`);
}

export interface OwnSubjects {
  /** Whether the server refused a subject that is this host's own (its id's, or its inbox). */
  holds(subject: string): boolean;
  /** This node's id, where its credential came from (a file, or a user name), and how it gets one of its own. */
  id: string;
  credential: string;
  remedy: string;
}

export class ViolationWords {
  private ownSaid = false;

  constructor(private readonly own: OwnSubjects | null) {}

  /** What to say of a refusal not heard before; null when it was said already in other words. */
  say(line: string): string | null {
    const subject = /"([^"]+)"/.exec(line)?.[1];
    if (this.own && subject !== undefined && this.own.holds(subject)) {
      if (this.ownSaid) return null;
      this.ownSaid = true;
      return `the NATS server refuses this node its own subjects (${line}): the credential it joined with (${this.own.credential}) was not made for node ${this.own.id}, but for another machine or for this one before its key changed: ${this.own.remedy}. Each refusal is counted: hangar cluster status`;
    }
    return `the NATS server refused: ${line}`;
  }
}
