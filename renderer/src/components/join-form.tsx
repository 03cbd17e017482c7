/**
 * A connection form as its request: text fields trimmed, empty ones left out (an empty secret keeps the one already
 * kept), and the insecure switch only when it is on.
 */
export function requestFrom<T>(form: { insecure: boolean }): T {
  const { insecure, ...texts } = form as { insecure: boolean } & Record<string, string>;
  const given = Object.fromEntries(Object.entries(texts).filter(([, value]) => value.trim() !== '').map(([key, value]) => [key, value.trim()]));
  return { ...given, ...(insecure && { insecure }) } as T;
}

/** One text field of a connection form, as every such form lays it out. */
export function JoinField(props: {
  label: string;
  value: string;
  disabled: boolean;
  onChange(value: string): void;
  testId: string;
  type?: string;
  placeholder?: string;
  grow?: boolean;
}) {
  return (
    <label className={`field${props.grow ? ' grow' : ''}`}>
      {props.label}
      <input
        value={props.value}
        disabled={props.disabled}
        type={props.type ?? 'text'}
        placeholder={props.placeholder}
        autoComplete="off"
        onChange={(e) => props.onChange(e.target.value)}
        data-testid={props.testId}
      />
    </label>
  );
}
