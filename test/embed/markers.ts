/** Strings that exist only in the run's transcript, receipts or config, never in the host's own data. */
export const TRANSCRIPT_MARKERS = ['SYSTEM-PROMPT-MARKER', 'LOOKUP-RESULT-MARKER', 'REFUND-RESULT-MARKER', '"messages"', '"receipts"'];
