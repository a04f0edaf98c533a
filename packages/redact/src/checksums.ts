/** Whether a string of ASCII digits passes the Luhn check. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let index = digits.length - 1; index >= 0; index--) {
    let digit = digits.charCodeAt(index) - 48;
    if (double) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
    double = !double;
  }
  return sum % 10 === 0;
}

/** Whether an IBAN (upper case, no separators) passes the ISO 7064 mod-97 check. */
export function ibanChecksumValid(iban: string): boolean {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (let index = 0; index < rearranged.length; index++) {
    const code = rearranged.charCodeAt(index);
    if (code >= 48 && code <= 57) {
      remainder = (remainder * 10 + (code - 48)) % 97;
    } else if (code >= 65 && code <= 90) {
      remainder = (remainder * 100 + (code - 55)) % 97;
    } else {
      return false;
    }
  }
  return remainder === 1;
}

/** Whether 13 ASCII digits pass the EAN-13 / ISBN-13 / GTIN-13 check (weights 1 and 3). */
export function ean13Valid(digits: string): boolean {
  if (digits.length !== 13) return false;
  let sum = 0;
  for (let index = 0; index < 13; index++)
    sum += (digits.charCodeAt(index) - 48) * (index % 2 === 0 ? 1 : 3);
  return sum % 10 === 0;
}

/** Whether 12 ASCII digits pass the UPC-A check (weights 3 and 1). */
export function upcValid(digits: string): boolean {
  if (digits.length !== 12) return false;
  let sum = 0;
  for (let index = 0; index < 12; index++)
    sum += (digits.charCodeAt(index) - 48) * (index % 2 === 0 ? 3 : 1);
  return sum % 10 === 0;
}

/** Whether an ISBN-13 (digits only) has the 978/979 prefix and a valid check digit. */
export function isbn13Valid(digits: string): boolean {
  return (digits.startsWith("978") || digits.startsWith("979")) && ean13Valid(digits);
}

/** Whether an ISBN-10 (nine digits and a digit or `X`) has a valid mod-11 check digit. */
export function isbn10Valid(value: string): boolean {
  if (value.length !== 10) return false;
  let sum = 0;
  for (let index = 0; index < 10; index++) {
    const code = value.charCodeAt(index);
    const digit = index === 9 && (code === 88 || code === 120) ? 10 : code - 48;
    if (digit < 0 || digit > (index === 9 ? 10 : 9)) return false;
    sum += digit * (10 - index);
  }
  return sum % 11 === 0;
}

/** Whether a UPS tracking number (`1Z` and 16 characters) has a valid check digit. */
export function upsTrackingValid(value: string): boolean {
  if (value.length !== 18 || !/^1Z[0-9A-Z]{16}$/i.test(value)) return false;
  const body = value.slice(2, 17).toUpperCase();
  let sum = 0;
  for (let index = 0; index < body.length; index++) {
    const code = body.charCodeAt(index);
    const digit = code <= 57 ? code - 48 : (code - 3) % 10;
    sum += index % 2 === 1 ? digit * 2 : digit;
  }
  return (10 - (sum % 10)) % 10 === value.charCodeAt(17) - 48;
}

/** Whether 12 digits are a FedEx Express tracking number (weights 1, 3, 7 from the right, mod 11). */
export function fedexExpressValid(digits: string): boolean {
  if (digits.length !== 12) return false;
  const weights = [1, 3, 7];
  let sum = 0;
  for (let index = 0; index < 11; index++)
    sum += (digits.charCodeAt(10 - index) - 48) * weights[index % 3]!;
  return (sum % 11) % 10 === digits.charCodeAt(11) - 48;
}

/** Whether 15 digits starting 96 are a FedEx Ground tracking number (mod 10, weights 3 and 1). */
export function fedexGroundValid(digits: string): boolean {
  if (digits.length !== 15) return false;
  let sum = 0;
  for (let index = 0; index < 14; index++) {
    const digit = digits.charCodeAt(13 - index) - 48;
    sum += index % 2 === 0 ? digit * 3 : digit;
  }
  return (10 - (sum % 10)) % 10 === digits.charCodeAt(14) - 48;
}
