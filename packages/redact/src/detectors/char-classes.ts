/** Whether a UTF-16 code unit is an ASCII letter or digit. */
export function isAlphanumeric(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

/** Whether a code unit is a word character in the sense of `\w`. */
export function isWordCode(code: number): boolean {
  return isAlphanumeric(code) || code === 95;
}

/** Whether a code unit is an ASCII hex digit. */
export function isHexCode(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102);
}

/** Whether a code unit is an ASCII digit. */
export function isDigitCode(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** Keeps only the ASCII digits of a string. */
export function digitsOf(text: string): string {
  let digits = "";
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code >= 48 && code <= 57) digits += text[index];
  }
  return digits;
}
