export interface PiiEntity {
  type: string;
  start: number;
  end: number;
  value: string;
}
export interface PiiRow {
  id: string;
  text: string;
  entities: PiiEntity[];
  subset: string;
  lookalikes?: { kind: string; imitates: string; start: number; end: number; value: string }[];
  meta?: Record<string, unknown>;
}
export interface TypeScore {
  type: string;
  gold: number;
  found: number;
  predicted: number;
  truePositives: number;
  recall: number | undefined;
  precision: number | undefined;
  missed: { id: string; value: string }[];
  falsePositives: { id: string; value: string }[];
}
export interface PiiScore {
  perType: Map<string, TypeScore>;
  flaggedNegatives: { id: string; type: string; text: string }[];
  negatives: number;
  rows: number;
  lookalikes: Map<
    string,
    {
      kind: string;
      imitates: string;
      total: number;
      kept: number;
      rate: number;
      eaten: { id: string; value: string; as: string }[];
    }
  >;
  lookalikeTotal: number;
  lookalikeKept: number;
}
export const REPO_ROOT: string;
export const GENERATED_PATH: string;
export const LOCALES_PATH: string;
export const PUBLIC_CORPUS_ENV: string;
export function publicCorpusPath(argv?: string[]): string | undefined;
export const PUBLIC_TEST_SUBSETS: string[];
export function isPublicTestRow(row: PiiRow): boolean;
export function splitPublicRows(rows: PiiRow[]): { dev: PiiRow[]; test: PiiRow[] };
export const PATTERN_TYPES: string[];
export const OTHER_PATTERN_TYPES: string[];
export const NER_TYPES: string[];
export function loadPiiRows(path?: string): PiiRow[];
export function lookalikeType(row: PiiRow): string | undefined;
export function scorePii(
  rows: PiiRow[],
  findFor: (text: string) => { type: string; start: number; end: number }[],
): PiiScore;
