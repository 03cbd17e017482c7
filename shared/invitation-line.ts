// What a person pastes to join: the whole line `hangar cluster invite` printed, or the token alone.

/** The token in what was pasted. */
export function invitationToken(pasted: string): string {
  return pasted.trim().replace(/^HANGAR_JOIN_TOKEN=(\S+)\s+hangar agent$/, '$1');
}
