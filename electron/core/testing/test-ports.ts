// A test file with fixed ports runs twice in a full run, under each platform layer, and the two runs may overlap:
// each layer gets its own range (below the ephemeral ports; no other file uses these).
const UNDER_POSIX = process.env.HANGAR_PLATFORM === 'posix';

/** `linux` under the linux layer, `posix` under the POSIX one. */
export function portsFor(linux: [number, number], posix: [number, number]): [number, number] {
  return UNDER_POSIX ? posix : linux;
}
