/**
 * The tray icon: a hangar, 32×32 RGBA PNG shown at 16×16 points (scale factor 2). Kept in the code, not under build/,
 * which is not packed into the app. On macOS it is a template image: only its alpha counts, drawn in the menu bar's colour.
 */
export const TRAY_ICON_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAYAAABzenr0AAAAXElEQVR42u3WsQ0AIAhEUfZyO4e2PRcwRvQUjVf8EvIqgqVcLDITQAABBHAOYDA6AJMtA0BqCgByLgA29QYAm+sCcCgBmgDmhRveJYAAAngHWQC7DoCg7gH8+5ZXEVd0zzQePG0AAAAASUVORK5CYII=';
