/**
 * Cyrillic and Greek letters (and two IPA ones) that look like Latin letters, each mapped to
 * the lower-case Latin letter it imitates; every entry is one UTF-16 unit to one, so offsets
 * stay valid when a text is folded through it. One table for every gate that compares text, so
 * a look-alike folded by one (policy's argument lists) is folded by the other (injection's
 * scanners): fold only inside words that also hold Latin letters, so Russian or Greek text
 * keeps its meaning.
 */
export const latinLookAlikes: Readonly<Record<string, string>> = Object.freeze({
  а: "a",
  в: "b",
  е: "e",
  ё: "e",
  к: "k",
  м: "m",
  н: "h",
  о: "o",
  р: "p",
  с: "c",
  т: "t",
  у: "y",
  х: "x",
  і: "i",
  ї: "i",
  ј: "j",
  ѕ: "s",
  ԁ: "d",
  ԛ: "q",
  ԝ: "w",
  һ: "h",
  ӏ: "l",
  ɡ: "g",
  ɑ: "a",
  ο: "o",
  α: "a",
  ι: "i",
  ν: "v",
  κ: "k",
  ρ: "p",
  τ: "t",
  υ: "u",
  ε: "e",
  β: "b",
  η: "n",
  μ: "u",
  χ: "x",
  γ: "y",
  ζ: "z",
  ω: "w",
  ϲ: "c",
  ϳ: "j",
});
