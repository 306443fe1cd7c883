package dev.prescient;

import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client's log: SLF4J (the application binds it to Logback, Log4j 2, java.util.logging ...), one line per
 * event with the worker's name and the check ids. A message is built only when its level is on.
 */
final class Log {
    private final Logger logger;

    Log(Class<?> source) {
        this.logger = LoggerFactory.getLogger(source);
    }

    void debug(Supplier<String> message) {
        if (logger.isDebugEnabled()) {
            logger.debug(message.get());
        }
    }

    void info(Supplier<String> message) {
        if (logger.isInfoEnabled()) {
            logger.info(message.get());
        }
    }

    void warn(Supplier<String> message) {
        if (logger.isWarnEnabled()) {
            logger.warn(message.get());
        }
    }
}
