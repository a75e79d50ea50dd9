/** Moved to the shared test support; re-exported for specs in other folders that still import it from here. */
export { LEVELS, LogCapture, type LogLine } from '../../support/log-capture.js';
