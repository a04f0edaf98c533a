export type {
  AttackGoal,
  Carrier,
  DefenceConfig,
  SecurityRow,
  SecurityTableOptions,
  ValueForm,
} from "./security-table.js";
export {
  attackGoals,
  carriers,
  defenceConfigs,
  formatSecurityTable,
  runSecurityTable,
  valueForms,
} from "./security-table.js";
