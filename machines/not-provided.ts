/** The stand-in body of an actor a machine names but src/ provides: calling it means a host forgot to provide it. */
export const notProvided = (machine: string) => (name: string) => () => {
  throw new Error(`The ${name} actor was not provided to the ${machine} machine.`);
};
