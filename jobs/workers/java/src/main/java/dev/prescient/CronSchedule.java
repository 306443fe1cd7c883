package dev.prescient;

import java.util.Objects;

/**
 * A recurring schedule for {@code prescient.cron_add}: each occurrence of {@code spec} (5 or 6 cron fields,
 * or a macro such as {@code @hourly}) in {@code timeZone} puts a check of class {@code job} with
 * {@code payload} (JSON object text) into the future.
 */
public record CronSchedule(String id, String spec, String timeZone, String job, String payload) {
    public CronSchedule {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(timeZone, "timeZone");
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(payload, "payload");
    }

    public static CronSchedule of(String id, String spec, String job) {
        return new CronSchedule(id, spec, "UTC", job, "{}");
    }

    public CronSchedule timeZone(String zone) {
        return new CronSchedule(id, spec, zone, job, payload);
    }

    public CronSchedule payload(String json) {
        return new CronSchedule(id, spec, timeZone, job, json);
    }
}
