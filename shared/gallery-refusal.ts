// A node refuses to add a gallery it cannot read now. Every client shows the node's one line; the clients that can
// add it anyway (the CLI's --force, the Settings view's Add anyway) tell this refusal from any other by its ending.

const NOT_ADDED = ': the gallery was not added';

/** The node's refusal: why the location cannot be read, and that nothing was added. */
export function galleryRefusal(problem: string): string {
  return `${problem}${NOT_ADDED}`;
}

/** Whether an error's message is that refusal, which `force` would have gone past. */
export function isGalleryRefusal(message: string): boolean {
  return message.endsWith(NOT_ADDED);
}
