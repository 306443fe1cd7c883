package dev.prescient;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * A recurring schedule for {@code prescient.cron_add}: each occurrence of {@code spec} (5 or 6 cron fields,
 * or a macro such as {@code @hourly}) in {@code timeZone} puts a check of class {@code job} with
 * {@code payload} (JSON object text) into the future.
 *
 * @param catchUp after downtime: {@code one} (the default), {@code all} or {@code none} of the missed occurrences
 * @param deadline an occurrence fired later than this after its time is skipped; or null
 * @param window the schedules' occurrences spread over this window; or null
 * @param jitter each occurrence at an offset of its own within this; or null (not with a window)
 * @param options overlap, start_at, end_at, max_runs, priority, pause_after_failures, dst_repeated,
 *     dst_missing, calendar, when_closed (docs/schedules.md), as JSON object text; or null
 * @param by who added it; null: the database's current_user
 */
public record CronSchedule(String id, String spec, String timeZone, String job, String payload, String catchUp,
                           Duration deadline, Duration window, Duration jitter, String options, String by) {
    public CronSchedule {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(timeZone, "timeZone");
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(payload, "payload");
        Objects.requireNonNull(catchUp, "catchUp");
    }

    public static CronSchedule of(String id, String spec, String job) {
        return new CronSchedule(id, spec, "UTC", job, "{}", "one", null, null, null, null, null);
    }

    public CronSchedule timeZone(String zone) {
        return edit(c -> c.timeZone = zone);
    }

    public CronSchedule payload(String json) {
        return edit(c -> c.payload = json);
    }

    public CronSchedule catchUp(String policy) {
        return edit(c -> c.catchUp = policy);
    }

    public CronSchedule deadline(Duration late) {
        return edit(c -> c.deadline = late);
    }

    public CronSchedule window(Duration spread) {
        return edit(c -> c.window = spread);
    }

    public CronSchedule jitter(Duration spread) {
        return edit(c -> c.jitter = spread);
    }

    public CronSchedule options(Map<String, ?> fields) {
        return edit(c -> c.options = Json.write(fields));
    }

    public CronSchedule by(String who) {
        return edit(c -> c.by = who);
    }

    /** This schedule with one field changed: the one place every field is copied. */
    private CronSchedule edit(java.util.function.Consumer<Fields> change) {
        Fields c = new Fields(this);
        change.accept(c);
        return new CronSchedule(id, spec, c.timeZone, job, c.payload, c.catchUp, c.deadline, c.window, c.jitter,
                                c.options, c.by);
    }

    /** The fields a method may change, copied from a schedule. */
    private static final class Fields {
        String timeZone;
        String payload;
        String catchUp;
        Duration deadline;
        Duration window;
        Duration jitter;
        String options;
        String by;

        Fields(CronSchedule s) {
            timeZone = s.timeZone;
            payload = s.payload;
            catchUp = s.catchUp;
            deadline = s.deadline;
            window = s.window;
            jitter = s.jitter;
            options = s.options;
            by = s.by;
        }
    }
}
