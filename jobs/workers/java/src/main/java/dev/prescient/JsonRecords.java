package dev.prescient;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Typed payloads without a JSON library: a record's components as a JSON object and back
 * ({@link NewCheck#payload(Record)}, {@link Check#payloadAs(Class)}). A component is read from the field of its
 * name, or of its name in snake_case ({@code orderId} from {@code order_id}, as the other clients write
 * payloads); fields the record has no component for are ignored. Components may be strings, numbers and
 * booleans (boxed or not), {@code BigDecimal} and {@code BigInteger} (a non-integral number comes through the
 * {@code double} {@link Json} parses it to), enums (by name), {@code UUID},
 * {@code Instant}, {@code OffsetDateTime}, {@code LocalDate}, {@code LocalDateTime} and {@code Duration}
 * (ISO-8601 text), records, and {@code List}, {@code Set}, {@code Collection} and {@code Map<String, V>} of
 * those; {@code Object} takes the parsed JSON value as it is. A value that does not fit is refused
 * ({@link IllegalArgumentException} naming the field and the value).
 */
final class JsonRecords {
    private JsonRecords() {
    }

    /** A record as a map of its components, in their order, for {@link Json#write}. */
    static Map<String, Object> fields(Record value) {
        Map<String, Object> fields = new LinkedHashMap<>();
        for (RecordComponent component : value.getClass().getRecordComponents()) {
            try {
                component.getAccessor().setAccessible(true);
                fields.put(component.getName(), component.getAccessor().invoke(value));
            } catch (IllegalAccessException | InvocationTargetException e) {
                throw new IllegalArgumentException("cannot read " + value.getClass().getName() + "."
                                                   + component.getName() + ": " + e, e);
            }
        }
        return fields;
    }

    /** A JSON object's fields as an instance of {@code type}. */
    static <T extends Record> T read(Map<String, Object> object, Class<T> type) {
        return type.cast(record(object, type, type.getSimpleName()));
    }

    private static Object record(Map<?, ?> object, Class<?> type, String path) {
        RecordComponent[] components = type.getRecordComponents();
        Object[] args = new Object[components.length];
        Class<?>[] types = new Class<?>[components.length];
        for (int i = 0; i < components.length; i++) {
            RecordComponent component = components[i];
            String name = component.getName();
            String field = object.containsKey(name) ? name : snakeCase(name);
            Object json = object.get(field);
            String where = path + "." + field;
            if (json == null && component.getType().isPrimitive()) {
                throw new IllegalArgumentException("payload field '" + where + "' is "
                                                   + (object.containsKey(field) ? "null" : "missing")
                                                   + ": " + component.getType() + " needs a value");
            }
            args[i] = convert(json, component.getGenericType(), where);
            types[i] = component.getType();
        }
        try {
            Constructor<?> canonical = type.getDeclaredConstructor(types);
            canonical.setAccessible(true);
            return canonical.newInstance(args);
        } catch (InvocationTargetException e) {
            throw new IllegalArgumentException("payload '" + path + "': " + type.getSimpleName() + " refused it: "
                                               + e.getCause(), e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException("cannot make a " + type.getName() + ": " + e, e);
        }
    }

    private static Object convert(Object json, Type type, String where) {
        if (json == null) {
            return null;
        }
        Class<?> raw;
        if (type instanceof ParameterizedType p) {
            raw = (Class<?>) p.getRawType();
        } else if (type instanceof Class<?> c) {
            raw = c;
        } else {
            return json; // a wildcard or a type variable: the JSON value as it is
        }
        try {
            if (raw == Object.class) {
                return json;
            }
            if (raw == String.class) {
                return (String) json;
            }
            if (raw == boolean.class || raw == Boolean.class) {
                return (Boolean) json;
            }
            if (Number.class.isAssignableFrom(box(raw))) {
                return number((Number) json, box(raw));
            }
            if (raw.isEnum()) {
                return enumConstant(raw, (String) json);
            }
            if (raw == UUID.class) {
                return UUID.fromString((String) json);
            }
            if (raw == Instant.class) {
                return OffsetDateTime.parse((String) json).toInstant(); // any offset, not only Z
            }
            if (raw == OffsetDateTime.class) {
                return OffsetDateTime.parse((String) json);
            }
            if (raw == LocalDate.class) {
                return LocalDate.parse((String) json);
            }
            if (raw == LocalDateTime.class) {
                return LocalDateTime.parse((String) json);
            }
            if (raw == Duration.class) {
                return Duration.parse((String) json);
            }
            if (raw.isRecord()) {
                return record((Map<?, ?>) json, raw, where);
            }
            if (raw == List.class || raw == Collection.class || raw == Set.class) {
                Collection<Object> out = raw == Set.class ? new LinkedHashSet<>() : new ArrayList<>();
                int i = 0;
                for (Object element : (List<?>) json) {
                    out.add(convert(element, argument(type, 0), where + "[" + i++ + "]"));
                }
                return out;
            }
            if (raw == Map.class) {
                Map<String, Object> out = new LinkedHashMap<>();
                for (Map.Entry<?, ?> e : ((Map<?, ?>) json).entrySet()) {
                    out.put((String) e.getKey(), convert(e.getValue(), argument(type, 1), where + "." + e.getKey()));
                }
                return out;
            }
        } catch (ClassCastException | DateTimeParseException | ArithmeticException e) {
            throw new IllegalArgumentException("payload field '" + where + "': " + Json.write(json) + " is not a "
                                               + type.getTypeName(), e);
        }
        throw new IllegalArgumentException("payload field '" + where + "': a " + type.getTypeName()
                                           + " cannot be read from JSON here");
    }

    private static Object number(Number n, Class<?> type) {
        BigDecimal exact = n instanceof Long l ? BigDecimal.valueOf(l) : new BigDecimal(n.toString());
        if (type == Double.class) {
            return n.doubleValue();
        }
        if (type == Float.class) {
            return n.floatValue();
        }
        if (type == BigDecimal.class) {
            return exact;
        }
        BigInteger integral = exact.toBigIntegerExact(); // ArithmeticException for 1.5
        if (type == BigInteger.class) {
            return integral;
        }
        if (type == Long.class) {
            return integral.longValueExact();
        }
        if (type == Integer.class) {
            return integral.intValueExact();
        }
        if (type == Short.class) {
            return integral.shortValueExact();
        }
        if (type == Byte.class) {
            return integral.byteValueExact();
        }
        throw new ClassCastException(type.getName());
    }

    private static Object enumConstant(Class<?> type, String name) {
        for (Object constant : type.getEnumConstants()) {
            if (((Enum<?>) constant).name().equals(name)) {
                return constant;
            }
        }
        throw new ClassCastException(name);
    }

    private static Type argument(Type type, int index) {
        if (type instanceof ParameterizedType p) {
            return p.getActualTypeArguments()[index];
        }
        return Object.class;
    }

    private static Class<?> box(Class<?> type) {
        if (!type.isPrimitive()) {
            return type;
        }
        return switch (type.getName()) {
            case "int" -> Integer.class;
            case "long" -> Long.class;
            case "double" -> Double.class;
            case "float" -> Float.class;
            case "short" -> Short.class;
            case "byte" -> Byte.class;
            case "boolean" -> Boolean.class;
            default -> Character.class;
        };
    }

    private static String snakeCase(String name) {
        return name.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT);
    }
}
