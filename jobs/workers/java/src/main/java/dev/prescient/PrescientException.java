package dev.prescient;

import java.sql.SQLException;

/**
 * A refusal by prescient's SQL functions, with the database's own words. It is an {@link SQLException} (the
 * SQLSTATE is kept), so code that handles JDBC errors handles it too; the subclasses name the kind.
 */
public class PrescientException extends SQLException {
    private static final long serialVersionUID = 1L;

    public PrescientException(String message, String sqlState, Throwable cause) {
        super(message, sqlState, cause);
    }

    /** SQLSTATE PR400: bad input (the message names the value); nothing was written. */
    public static final class Refused extends PrescientException {
        private static final long serialVersionUID = 1L;

        public Refused(String message, Throwable cause) {
            super(message, "PR400", cause);
        }
    }

    /** SQLSTATE PR409: a pending check already has this job key, or a schedule id is in use. */
    public static final class Conflict extends PrescientException {
        private static final long serialVersionUID = 1L;

        public Conflict(String message, Throwable cause) {
            super(message, "PR409", cause);
        }
    }

    /** SQLSTATE PR404: no such schedule. */
    public static final class NotFound extends PrescientException {
        private static final long serialVersionUID = 1L;

        public NotFound(String message, Throwable cause) {
            super(message, "PR404", cause);
        }
    }
}
