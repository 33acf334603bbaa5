/* Tests common/sch.c: every keyword, error paths and messages, the depth bound,
 * malformed schemas, and the embedded schemas against real documents. */
#include "check.h"
#include "names.h"
#include "err.h"
#include "sch.h"

#include <pthread.h>

/* JSON written with single quotes, for readability: 'a' becomes "a". */
static cJSON *parse_q(const char *text)
{
    char buf[8192];
    size_t n = strlen(text);
    CHECK(n < sizeof(buf));
    for (size_t i = 0; i <= n; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i];
    cJSON *doc = cJSON_Parse(buf);
    if (!doc)
        fprintf(stderr, "test JSON does not parse: %s\n", buf);
    CHECK(doc != NULL);
    return doc;
}

static char err[1024];

/* Validates instance against schema (both single-quoted JSON) with root "arguments". */
static int val(const char *schema, const char *instance)
{
    cJSON *s = parse_q(schema), *i = parse_q(instance);
    err[0] = '\0';
    int rc = sch_validate(s, i, "arguments", err, sizeof(err));
    /* the compiled schema, when it compiles, answers exactly the same */
    char cerr[1024] = "";
    sch_compiled_t *comp = sch_compile(s, "arguments", cerr, sizeof(cerr));
    if (comp) {
        CHECK_INT_EQ(sch_compiled_validate(comp, i, "arguments", cerr, sizeof(cerr)), rc);
        if (rc)
            CHECK_STR_EQ(cerr, err);
        sch_compiled_free(comp);
    }
    cJSON_Delete(s);
    cJSON_Delete(i);
    return rc;
}

#define OK(s, i)                                                                                   \
    do {                                                                                           \
        int rc_ = val(s, i);                                                                       \
        if (rc_ != 0)                                                                              \
            fprintf(stderr, "%s:%d: expected valid: %s\n", __FILE__, __LINE__, err);               \
        CHECK_INT_EQ(rc_, 0);                                                                      \
    } while (0)

/* Invalid, with exactly this error message. */
#define BAD(s, i, msg)                                                                             \
    do {                                                                                           \
        CHECK_INT_EQ(val(s, i), MCPQ_EINVAL);                                                      \
        CHECK_STR_EQ(err, msg);                                                                    \
    } while (0)

/* Invalid, with an error message containing needle. */
#define BADC(s, i, needle)                                                                         \
    do {                                                                                           \
        CHECK_INT_EQ(val(s, i), MCPQ_EINVAL);                                                      \
        CHECK_CONTAINS(err, needle);                                                               \
    } while (0)

static void test_types(void)
{
    OK("{'type':'object'}", "{}");
    OK("{'type':'array'}", "[]");
    OK("{'type':'string'}", "'x'");
    OK("{'type':'integer'}", "3");
    OK("{'type':'integer'}", "3.0");
    OK("{'type':'integer'}", "-1e3");
    OK("{'type':'number'}", "3.5");
    OK("{'type':'number'}", "3");
    OK("{'type':'boolean'}", "false");
    OK("{'type':'null'}", "null");
    OK("{'type':['string','null']}", "null");
    BAD("{'type':'integer'}", "3.5", "arguments: expected integer, got number");
    BAD("{'type':'integer'}", "'3'", "arguments: expected integer, got string");
    BAD("{'type':'object'}", "[]", "arguments: expected object, got array");
    BAD("{'type':'boolean'}", "0", "arguments: expected boolean, got integer");
    BAD("{'type':'null'}", "false", "arguments: expected null, got boolean");
    BAD("{'type':['string','null']}", "5", "arguments: expected string or null, got integer");
    BAD("{'type':['string','integer','null']}", "{}",
        "arguments: expected string, integer or null, got object");
    TEST_PASS("type");
}

static void test_objects(void)
{
    const char *add = "{'type':'object','properties':{'a':{'type':'integer'},"
                      "'b':{'type':'integer'}},'required':['a','b']}";
    OK(add, "{'a':1,'b':2}");
    BAD(add, "{'a':'x','b':2}", "arguments.a: expected integer, got string");
    BAD(add, "{'a':1,'b':'y'}", "arguments.b: expected integer, got string");
    BAD(add, "{'a':1}", "arguments: missing required property \"b\"");
    OK("{'additionalProperties':false,'properties':{'a':{}}}", "{'a':1}");
    BAD("{'additionalProperties':false,'properties':{'a':{}}}", "{'a':1,'zz':2}",
        "arguments: unknown property \"zz\"");
    OK("{'additionalProperties':{'type':'string'}}", "{'x':'1'}");
    BAD("{'additionalProperties':{'type':'string'}}", "{'x':1}",
        "arguments.x: expected string, got integer");
    OK("{'patternProperties':{'^x_':{'type':'integer'}},'additionalProperties':false}",
       "{'x_a':1}");
    BAD("{'patternProperties':{'^x_':{'type':'integer'}},'additionalProperties':false}",
        "{'x_a':'s'}", "arguments.x_a: expected integer, got string");
    BAD("{'patternProperties':{'^x_':{}},'additionalProperties':false}", "{'y':1}",
        "arguments: unknown property \"y\"");
    BAD("{'propertyNames':{'pattern':'^[a-z]+$'}}", "{'ok':1,'Bad Name':2}",
        "arguments[\"Bad Name\"]: invalid property name: does not match the pattern "
        "\"^[a-z]+$\"");
    OK("{'minProperties':1,'maxProperties':2}", "{'a':1}");
    BAD("{'minProperties':2}", "{'a':1}", "arguments: must have at least 2 properties");
    BAD("{'maxProperties':1}", "{'a':1,'b':2}", "arguments: must have at most 1 property");
    /* keywords of other types do not apply */
    OK("{'required':['a'],'minLength':3,'minItems':2,'minimum':5}", "true");
    /* member names that are not identifiers are quoted in paths */
    BAD("{'properties':{'a b':{'type':'string'}}}", "{'a b':1}",
        "arguments[\"a b\"]: expected string, got integer");
    TEST_PASS("objects");
}

static void test_arrays(void)
{
    OK("{'items':{'type':'integer'}}", "[1,2,3]");
    BAD("{'items':{'type':'integer'}}", "[1,'2',3]", "arguments[1]: expected integer, got string");
    BAD("{'minItems':1}", "[]", "arguments: must have at least 1 item");
    BAD("{'maxItems':2}", "[1,2,3]", "arguments: must have at most 2 items");
    OK("{'uniqueItems':true}", "[1,'1',[1],{'a':1},{'a':2},true,null]");
    BAD("{'uniqueItems':true}", "[1,2,1.0]",
        "arguments: must not contain duplicates (items 0 and 2 are equal)");
    BAD("{'uniqueItems':true}", "[{'a':1,'b':[2]},{'b':[2],'a':1}]",
        "arguments: must not contain duplicates (items 0 and 1 are equal)");
    OK("{'uniqueItems':false}", "[1,1]");
    /* the older tuple form, with additionalItems */
    OK("{'items':[{'type':'string'},{'type':'integer'}]}", "['a',1,null]");
    BAD("{'items':[{'type':'string'}],'additionalItems':false}", "['a',1]",
        "arguments: must have at most 1 items");
    BAD("{'items':[{'type':'string'}],'additionalItems':{'type':'string'}}", "['a',1]",
        "arguments[1]: expected string, got integer");

    /* a long array stays quick: hashing, not pairwise comparison */
    cJSON *s = parse_q("{'uniqueItems':true}"), *a = cJSON_CreateArray();
    for (int i = 0; i < 50000; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(i));
    CHECK_INT_EQ(sch_validate(s, a, "$", err, sizeof(err)), 0);
    cJSON_AddItemToArray(a, cJSON_CreateNumber(4711));
    CHECK_INT_EQ(sch_validate(s, a, "$", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "$: must not contain duplicates (items 4711 and 50000 are equal)");
    cJSON_Delete(s);
    cJSON_Delete(a);
    TEST_PASS("arrays");
}

static void test_strings_numbers(void)
{
    OK("{'minLength':2,'maxLength':3}", "'héé'"); /* code points, not bytes */
    BAD("{'maxLength':2}", "'héé'", "arguments: must be at most 2 characters long");
    BAD("{'minLength':1}", "''", "arguments: must be at least 1 character long");
    OK("{'minLength':1}", "'😀'");
    BAD("{'minLength':2}", "'😀'", "arguments: must be at least 2 characters long");
    OK("{'minimum':1,'maximum':10}", "10");
    BAD("{'minimum':1.5}", "1", "arguments: must be >= 1.5");
    BAD("{'maximum':86400000}", "86400001", "arguments: must be <= 86400000");
    BAD("{'exclusiveMinimum':0}", "0", "arguments: must be > 0");
    BAD("{'exclusiveMaximum':10}", "10", "arguments: must be < 10");
    OK("{'exclusiveMaximum':10}", "9.99");
    BAD("{'maximum':5,'exclusiveMaximum':true}", "5", "arguments: must be < 5");
    BAD("{'minimum':5,'exclusiveMinimum':true}", "5", "arguments: must be > 5");
    OK("{'minimum':5,'exclusiveMinimum':false}", "5");
    TEST_PASS("strings and numbers");
}

static void test_patterns(void)
{
    const char *name = "{'pattern':'^[A-Za-z][A-Za-z0-9_.-]*$'}";
    OK(name, "'a.b-c_9'");
    OK(name, "'x'");
    BAD(name, "'9abc'", "arguments: does not match the pattern \"^[A-Za-z][A-Za-z0-9_.-]*$\"");
    BAD(name, "'a b'", "arguments: does not match the pattern \"^[A-Za-z][A-Za-z0-9_.-]*$\"");
    BAD(name, "'a/b'", "arguments: does not match the pattern \"^[A-Za-z][A-Za-z0-9_.-]*$\"");
    OK("{'pattern':'^[a-z]{2,3}$'}", "'abc'");
    BADC("{'pattern':'^[a-z]{2,3}$'}", "'abcd'", "does not match");
    OK("{'pattern':'b'}", "'abc'"); /* unanchored: a search */
    /* ECMAScript escapes, translated to POSIX classes */
    OK("{'pattern':'^\\\\d{4}-\\\\d{2}$'}", "'2024-01'");
    BADC("{'pattern':'^\\\\d{4}-\\\\d{2}$'}", "'2024-1'", "does not match");
    OK("{'pattern':'^\\\\w+@\\\\w+\\\\.com$'}", "'a_1@b.com'");
    BADC("{'pattern':'^\\\\w+@\\\\w+\\\\.com$'}", "'a@bxcom'", "does not match");
    OK("{'pattern':'^\\\\S+$'}", "'héllo'");
    BADC("{'pattern':'^\\\\S+$'}", "'a b'", "does not match");
    OK("{'pattern':'^[\\\\w\\\\-]+$'}", "'a-b_c'");
    OK("{'pattern':'^[\\\\d.]+$'}", "'1.2'");
    BADC("{'pattern':'^[\\\\d.]+$'}", "'1,2'", "does not match");
    OK("{'pattern':'^[^\\\\s]+$'}", "'x'");
    BADC("{'pattern':'^[^\\\\s]+$'}", "'a\\tb'", "does not match");
    OK("{'pattern':'^[\\\\]\\\\-^]+$'}", "']-^'");
    BADC("{'pattern':'^[a\\\\-z]+$'}", "'b'", "does not match");
    OK("{'pattern':'^[a\\\\-z]+$'}", "'-az'");
    OK("{'pattern':'^[^\\\"]+$'}", "'héllo'");
    OK("{'pattern':'^(?:ab)+?$'}", "'abab'");
    OK("{'pattern':'^\\\\u0041\\\\x42\\\\.\\\\/$'}", "'AB./'");
    BADC("{'pattern':'^\\\\u0041\\\\x42\\\\.$'}", "'ABx'", "does not match");
    OK("{'pattern':'^https?://\\\\S+$'}", "'http://x/y'");
    /* what POSIX ERE cannot do is refused, not guessed */
    BADC("{'pattern':'(?=a)'}", "'a'", "arguments: invalid schema: pattern \"(?=a)\"");
    BADC("{'pattern':'(a)\\\\1'}", "'aa'", "invalid schema");
    BADC("{'pattern':'\\\\p{L}'}", "'a'", "invalid schema");
    BADC("{'pattern':'[é]'}", "'a'", "invalid schema");
    TEST_PASS("pattern");
}

static void test_enum_const(void)
{
    OK("{'enum':['a',1,null,{'x':[1]}]}", "{'x':[1.0]}");
    BAD("{'enum':['a','b']}", "'c'", "arguments: must be one of \"a\", \"b\"");
    BAD("{'enum':[1,2]}", "'1'", "arguments: must be one of 1, 2");
    OK("{'const':'builtin'}", "'builtin'");
    BAD("{'const':'builtin'}", "'http'", "arguments: must be \"builtin\"");
    BAD("{'const':{'a':1}}", "{'a':2}", "arguments: must be {\"a\":1}");
    TEST_PASS("enum and const");
}

static void test_combinators(void)
{
    OK("{'allOf':[{'type':'integer'},{'minimum':1}]}", "2");
    BAD("{'allOf':[{'type':'integer'},{'minimum':1}]}", "0", "arguments: must be >= 1");
    OK("{'anyOf':[{'type':'string'},{'type':'null'}]}", "null");
    BAD("{'anyOf':[{'type':'string'},{'type':'null'}]}", "1",
        "arguments: does not match any alternative: (1) expected string, got integer; "
        "(2) expected null, got integer");
    OK("{'oneOf':[{'required':['a']},{'required':['b']}]}", "{'a':1}");
    BAD("{'oneOf':[{'required':['a']},{'required':['b']}]}", "{}",
        "arguments: does not match any alternative: (1) missing required property \"a\"; "
        "(2) missing required property \"b\"");
    BAD("{'oneOf':[{'title':'A','required':['a']},{'required':['b']}]}", "{'a':1,'b':2}",
        "arguments: must match exactly one alternative, but matches 1 (A) and 2");
    OK("{'not':{'type':'string'}}", "1");
    BAD("{'not':{'type':'string'}}", "'x'", "arguments: must not match the schema in \"not\"");
    /* the one branch that got past the instance itself is the one reported */
    BAD("{'anyOf':[{'type':'string'},{'type':'object','properties':{'n':{'type':'integer'}}}]}",
        "{'n':'x'}", "arguments.n: expected integer, got string");
    /* a discriminator ("type": {"const": ...}) picks the branch to report */
    const char *exec = "{'oneOf':["
                       "{'properties':{'type':{'const':'builtin'},'name':{'enum':['echo']}},"
                       "'required':['type','name']},"
                       "{'properties':{'type':{'const':'exec'},'argv':{'type':'array'}},"
                       "'required':['type','argv']}]}";
    OK(exec, "{'type':'exec','argv':[]}");
    BAD(exec, "{'type':'exec'}", "arguments: missing required property \"argv\"");
    BAD(exec, "{'type':'builtin','name':'x'}", "arguments.name: must be one of \"echo\"");
    BAD(exec, "{'type':'nope'}", "arguments.type: must be one of \"builtin\", \"exec\"");
    /* invalid schemas inside not/anyOf are errors, not a "does not match" */
    BADC("{'not':{'type':5}}", "1", "invalid schema");
    BADC("{'anyOf':[{'type':5},{}]}", "1", "invalid schema");
    TEST_PASS("allOf, anyOf, oneOf, not");
}

static void test_refs(void)
{
    OK("{'$defs':{'x':{'type':'string'}},'properties':{'a':{'$ref':'#/$defs/x'}}}", "{'a':'s'}");
    BAD("{'$defs':{'x':{'type':'string'}},'properties':{'a':{'$ref':'#/$defs/x'}}}", "{'a':1}",
        "arguments.a: expected string, got integer");
    BAD("{'definitions':{'x':{'type':'string'}},'items':{'$ref':'#/definitions/x'}}", "[1]",
        "arguments[0]: expected string, got integer");
    BAD("{'$defs':{'a/b~c':{'type':'string'}},'$ref':'#/$defs/a~1b~0c'}", "1",
        "arguments: expected string, got integer");
    BAD("{'type':'object','properties':{'next':{'$ref':'#'}},'required':['v']}",
        "{'v':1,'next':{'v':2,'next':{}}}", "arguments.next.next: missing required property \"v\"");
    BADC("{'$ref':'#/$defs/none'}", "1",
         "arguments: invalid schema: cannot resolve \"$ref\": \"#/$defs/none\"");
    BADC("{'$ref':'http://example.com/s.json'}", "1", "invalid schema: cannot resolve");
    /* an embedded schema by file name */
    OK("{'$ref':'call-tool-result.schema.json'}", "{'content':[]}");
    BAD("{'$ref':'call-tool-result.schema.json#/$defs/textContent'}", "{'type':'text'}",
        "arguments: missing required property \"text\"");
    TEST_PASS("$ref");
}

static void test_booleans_and_bad_schemas(void)
{
    OK("true", "1");
    BAD("false", "1", "arguments: is not allowed here");
    BAD("{'properties':{'executor':false}}", "{'executor':{}}",
        "arguments.executor: is not allowed here");
    OK("{'format':'email','x-unknown':{'type':5},'description':3}", "'not an email'");
    BAD("5", "1", "arguments: invalid schema: a schema must be an object or a boolean");
    BAD("[]", "1", "arguments: invalid schema: a schema must be an object or a boolean");
    BAD("{'type':5}", "1",
        "arguments: invalid schema: \"type\" must be a type name or a non-empty array of them");
    BAD("{'type':'float'}", "1", "arguments: invalid schema: \"type\" names an unknown type");
    BAD("{'type':[]}", "1",
        "arguments: invalid schema: \"type\" must be a type name or a non-empty array of them");
    BAD("{'minLength':-1}", "'x'",
        "arguments: invalid schema: \"minLength\" must be a non-negative integer");
    BAD("{'maxItems':1.5}", "[]",
        "arguments: invalid schema: \"maxItems\" must be a non-negative integer");
    BAD("{'minimum':'1'}", "1", "arguments: invalid schema: \"minimum\" must be a number");
    BAD("{'required':'a'}", "{}", "arguments: invalid schema: \"required\" must be an array");
    BAD("{'required':[1]}", "{}",
        "arguments: invalid schema: \"required\" must be an array of strings");
    BAD("{'properties':[]}", "{}", "arguments: invalid schema: \"properties\" must be an object");
    BAD("{'properties':{'a':3}}", "{'a':1}",
        "arguments.a: invalid schema: a schema must be an object or a boolean");
    BAD("{'enum':'a'}", "'a'", "arguments: invalid schema: \"enum\" must be an array");
    BAD("{'anyOf':[]}", "1", "arguments: invalid schema: \"anyOf\" must be a non-empty array");
    BAD("{'uniqueItems':1}", "[]", "arguments: invalid schema: \"uniqueItems\" must be a boolean");
    BAD("{'pattern':3}", "'a'", "arguments: invalid schema: \"pattern\" must be a string");
    BAD("{'$ref':3}", "1", "arguments: invalid schema: \"$ref\" must be a string");

    /* NULL arguments and errstr */
    cJSON *s = parse_q("{'type':'string'}"), *i = parse_q("1");
    CHECK_INT_EQ(sch_validate(s, i, NULL, NULL, 0), MCPQ_EINVAL);
    CHECK_INT_EQ(sch_validate(NULL, i, NULL, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_INT_EQ(sch_validate(s, NULL, NULL, err, sizeof(err)), MCPQ_EINVAL);
    char tiny[8];
    CHECK_INT_EQ(sch_validate(s, i, NULL, tiny, sizeof(tiny)), MCPQ_EINVAL);
    CHECK_STR_EQ(tiny, "$: expe");
    cJSON_Delete(s);
    cJSON_Delete(i);
    TEST_PASS("boolean and malformed schemas");
}

/* {"properties":{"a":{"properties":{"a": ... n levels ...}}}} and {"a":{"a":...}} */
static void nest(int n, cJSON **schema, cJSON **inst)
{
    *schema = cJSON_CreateObject();
    *inst = cJSON_CreateObject();
    cJSON *s = *schema, *i = *inst;
    for (int k = 0; k < n; k++) {
        cJSON *ps = cJSON_AddObjectToObject(s, "properties");
        s = cJSON_AddObjectToObject(ps, "a");
        i = cJSON_AddObjectToObject(i, "a");
    }
    cJSON_AddStringToObject(s, "type", "string");
}

static void test_depth(void)
{
    cJSON *s, *i;
    nest(40, &s, &i);
    CHECK_INT_EQ(sch_validate(s, i, "$", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "expected string, got object"); /* deep but within the bound */
    CHECK_INT_EQ(sch_schema_check(s, "$", err, sizeof(err)), 0);
    cJSON_Delete(s);
    cJSON_Delete(i);

    nest(200, &s, &i);
    CHECK_INT_EQ(sch_validate(s, i, "$", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "nested more than 64 levels deep");
    CHECK(strncmp(err, "$.a.a.a.a", 9) == 0);
    CHECK_INT_EQ(sch_schema_check(s, "$", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "nested more than 64 levels deep");
    cJSON_Delete(s);
    cJSON_Delete(i);

    /* a $ref cycle that consumes nothing, directly and through anyOf/not */
    BADC("{'$defs':{'x':{'$ref':'#/$defs/x'}},'$ref':'#/$defs/x'}", "1", "nested more than 64");
    BADC("{'anyOf':[{'$ref':'#'}]}", "1", "nested more than 64");
    BADC("{'not':{'$ref':'#'}}", "1", "nested more than 64");
    /* a deep instance against an equally deep recursive schema */
    cJSON *rs = parse_q("{'type':'array','items':{'$ref':'#'}}");
    cJSON *arr = cJSON_CreateArray(), *at = arr;
    for (int k = 0; k < 500; k++) {
        cJSON *n = cJSON_CreateArray();
        cJSON_AddItemToArray(at, n);
        at = n;
    }
    CHECK_INT_EQ(sch_validate(rs, arr, "$", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "nested more than 64 levels deep");
    /* and an equality test of deep values does not recurse without bound */
    cJSON *cs = cJSON_CreateObject();
    cJSON_AddItemToObject(cs, "const", cJSON_Duplicate(arr, 1));
    CHECK_INT_EQ(sch_validate(cs, arr, "$", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "nested more than 64 levels deep");
    cJSON_Delete(cs);
    cJSON_Delete(rs);
    cJSON_Delete(arr);
    TEST_PASS("depth bound");
}

static int check_q(const char *schema)
{
    cJSON *s = parse_q(schema);
    int rc = sch_schema_check(s, "$.inputSchema", err, sizeof(err));
    cJSON_Delete(s);
    return rc;
}

static void test_schema_check(void)
{
    CHECK_INT_EQ(check_q("{'type':'object','properties':{'a':{'type':'integer'},"
                         "'b':{'type':['string','null'],'pattern':'^\\\\d+$'}},"
                         "'required':['a'],'additionalProperties':false,"
                         "'$defs':{'x':{'enum':[1]}},'anyOf':[{'$ref':'#/$defs/x'},true]}"),
                 0);
    CHECK_INT_EQ(check_q("{'properties':{'a':{'type':5}}}"), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "$.inputSchema.properties.a: invalid schema: \"type\" must be a type name "
                      "or a non-empty array of them");
    CHECK_INT_EQ(check_q("{'items':[{},{'minLength':'x'}]}"), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "$.inputSchema.items[1]: invalid schema: \"minLength\" must be a "
                      "non-negative integer");
    CHECK_INT_EQ(check_q("{'oneOf':[{'pattern':'(?<x>a)'}]}"), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "$.inputSchema.oneOf[0]: invalid schema: pattern \"(?<x>a)\"");
    CHECK_INT_EQ(check_q("{'patternProperties':{'(?!x)':{}}}"), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "$.inputSchema: invalid schema: pattern");
    CHECK_INT_EQ(check_q("{'properties':{'a':{'$ref':'#/$defs/missing'}}}"), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "$.inputSchema.properties.a: invalid schema: cannot resolve \"$ref\": "
                      "\"#/$defs/missing\"");
    CHECK_INT_EQ(check_q("{'not':[]}"), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "$.inputSchema.not: invalid schema: a schema must be an object or a "
                      "boolean");
    CHECK_INT_EQ(check_q("{'required':['a',2]}"), MCPQ_EINVAL);
    CHECK_INT_EQ(check_q("{'exclusiveMinimum':true,'minimum':0}"), 0);
    CHECK_INT_EQ(check_q("7"), MCPQ_EINVAL);
    CHECK_INT_EQ(sch_schema_check(NULL, NULL, err, sizeof(err)), MCPQ_EINVAL);
    TEST_PASS("sch_schema_check");
}

/* JSON Schema 2020-12 keywords: conditionals, tuples, contains, dependencies. */
static void test_2020_applicators(void)
{
    const char *cond = "{'if':{'properties':{'k':{'const':'n'}}},'then':{'properties':{'v':"
                       "{'type':'number'}}},'else':{'properties':{'v':{'type':'string'}}}}";
    OK(cond, "{'k':'n','v':1}");
    OK(cond, "{'k':'s','v':'x'}");
    BAD(cond, "{'k':'n','v':'x'}", "arguments.v: expected number, got string");
    BAD(cond, "{'k':'s','v':1}", "arguments.v: expected string, got integer");
    OK("{'then':{'type':'string'}}", "1"); /* then without if: ignored */
    const char *tuple = "{'prefixItems':[{'type':'integer'},{'type':'string'}],'items':false}";
    OK(tuple, "[1,'a']");
    OK(tuple, "[1]");
    BAD(tuple, "[1,2]", "arguments[1]: expected string, got integer");
    BAD(tuple, "[1,'a',null]", "arguments: must have at most 2 items");
    BAD("{'prefixItems':[true],'items':{'type':'null'}}", "[1,2]",
        "arguments[1]: expected null, got integer");
    const char *con = "{'contains':{'type':'integer'},'minContains':2,'maxContains':3}";
    OK(con, "['a',1,2]");
    BAD(con, "['a',1]", "arguments: must contain at least 2 items matching \"contains\" (1 does)");
    BAD(con, "[1,2,3,4]",
        "arguments: must contain at most 3 items matching \"contains\" "
        "(maxContains), but 4 do");
    BAD("{'contains':{'const':1}}", "[]",
        "arguments: must contain at least 1 item matching \"contains\" (0 do)");
    OK("{'contains':{'const':1},'minContains':0}", "[]");
    OK("{'maxContains':0}", "[1]"); /* without contains: nothing to count */
    const char *dep = "{'dependentRequired':{'card':['cvv']},"
                      "'dependentSchemas':{'card':{'properties':{'cvv':{'maxLength':4}}}}}";
    OK(dep, "{'cvv':'12345'}");
    BAD(dep, "{'card':'x'}",
        "arguments: missing property \"cvv\" (dependentRequired: \"card\" is present)");
    BAD(dep, "{'card':'x','cvv':'12345'}", "arguments.cvv: must be at most 4 characters long");
    BAD("{'dependencies':{'a':['b'],'c':{'required':['d']}}}", "{'a':1}",
        "arguments: missing property \"b\" (dependencies: \"a\" is present)");
    BAD("{'dependencies':{'a':['b'],'c':{'required':['d']}}}", "{'c':1}",
        "arguments: missing required property \"d\"");
    TEST_PASS("if/then/else, prefixItems, contains, dependentRequired, dependentSchemas");
}

/* multipleOf compares decimals exactly. */
static void test_multiple_of(void)
{
    OK("{'multipleOf':2}", "10");
    BAD("{'multipleOf':2}", "7", "arguments: must be a multiple of 2 (multipleOf)");
    OK("{'multipleOf':0.0001}", "0.0075"); /* 0.0075 / 0.0001 is 74.99999999999999 */
    BAD("{'multipleOf':0.0001}", "0.00751", "arguments: must be a multiple of 0.0001 (multipleOf)");
    OK("{'multipleOf':0.01}", "19.99");
    OK("{'multipleOf':0.1}", "0.3"); /* 0.1 * 3 != 0.3 in binary */
    OK("{'multipleOf':1e-8}", "12391239123");
    BAD("{'multipleOf':0.123456789}", "1e308",
        "arguments: must be a multiple of "
        "0.123456789 (multipleOf)");
    OK("{'multipleOf':1.5}", "-4.5");
    OK("{'multipleOf':3}", "'x'"); /* numbers only */
    OK("{'multipleOf':1e300}", "0");
    BAD("{'multipleOf':1e300}", "1e299", "arguments: must be a multiple of 1e+300 (multipleOf)");
    BADC("{'multipleOf':0}", "1", "invalid schema: \"multipleOf\" must be a number greater than 0");
    TEST_PASS("multipleOf");
}

/* unevaluatedProperties and unevaluatedItems see what the schema and its in-place
 * subschemas evaluated. */
static void test_unevaluated(void)
{
    const char *s = "{'properties':{'a':true},'allOf':[{'properties':{'b':true}}],"
                    "'anyOf':[{'properties':{'c':{'type':'integer'}},'required':['c']},"
                    "{'properties':{'d':true},'required':['d']}],"
                    "'$defs':{'e':{'properties':{'e':true}}},'$ref':'#/$defs/e',"
                    "'unevaluatedProperties':false}";
    OK(s, "{'a':1,'b':2,'c':3,'e':4}");
    OK(s, "{'c':1,'d':2}"); /* both anyOf branches match: both count */
    BAD(s, "{'c':1,'z':2}", "arguments: unknown property \"z\" (unevaluatedProperties)");
    /* a failed branch's annotations do not count */
    BAD(s, "{'c':'x','d':2}", "arguments: unknown property \"c\" (unevaluatedProperties)");
    BAD("{'unevaluatedProperties':{'type':'string'}}", "{'a':1}",
        "arguments.a: expected string, got integer");
    /* a subschema cannot see its parent's annotations */
    BAD("{'properties':{'a':true},'allOf':[{'unevaluatedProperties':false}]}", "{'a':1}",
        "arguments: unknown property \"a\" (unevaluatedProperties)");
    const char *cond = "{'if':{'properties':{'t':{'const':1}},'required':['t']},"
                       "'then':{'properties':{'x':true}},'else':{'properties':{'y':true}},"
                       "'unevaluatedProperties':false}";
    OK(cond, "{'t':1,'x':1}");
    OK(cond, "{'y':1}");
    BAD(cond, "{'t':2,'x':1}", "arguments: unknown property \"t\" (unevaluatedProperties)");
    const char *items = "{'prefixItems':[true],'contains':{'type':'string'},"
                        "'unevaluatedItems':false}";
    OK(items, "[1,'a','b']");
    BAD(items, "[1,'a',2]", "arguments: item 2 is not allowed (unevaluatedItems)");
    BAD("{'unevaluatedItems':{'type':'null'}}", "[null,1]",
        "arguments[1]: expected null, got integer");
    OK("{'dependentSchemas':{'a':{'properties':{'b':true}}},'properties':{'a':true},"
       "'unevaluatedProperties':false}",
       "{'a':1,'b':2}");
    /* a name from the instance cannot break the message into two lines */
    BAD("{'unevaluatedProperties':false}", "{'a\\nb':1}",
        "arguments: unknown property \"a?b\" (unevaluatedProperties)");
    TEST_PASS("unevaluatedProperties, unevaluatedItems");
}

/* $ref through $id and $anchor, and the bounds on references. */
static void test_ids_and_anchors(void)
{
    const char *s = "{'$id':'https://example.com/root.json','$defs':{"
                    "'a':{'$anchor':'posint','type':'integer','minimum':1},"
                    "'b':{'$id':'item.json','type':'string','$defs':{'c':{'const':'c'}}}},"
                    "'properties':{'n':{'$ref':'#posint'},'s':{'$ref':'item.json'},"
                    "'t':{'$ref':'https://example.com/item.json#/$defs/c'},"
                    "'u':{'$ref':'root.json#/$defs/a'}}}";
    OK(s, "{'n':2,'s':'x','t':'c','u':5}");
    BAD(s, "{'n':0}", "arguments.n: must be >= 1");
    BAD(s, "{'s':1}", "arguments.s: expected string, got integer");
    BAD(s, "{'t':'d'}", "arguments.t: must be \"c\"");
    OK("{'$id':'urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed','properties':{'a':{'$ref':"
       "'urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed#/$defs/x'}},'$defs':{'x':{'type':'null'}}}",
       "{'a':null}");
    /* a cycle without progress ends at the depth bound, as an error */
    BADC("{'$ref':'#'}", "1", "nested more than 64 levels deep");
    BADC("{'$defs':{'a':{'$ref':'#/$defs/b'},'b':{'$ref':'#/$defs/a'}},'$ref':'#/$defs/a'}", "1",
         "nested more than 64 levels deep");
    /* references that fan out (2^30 paths) stop at SCH_MAX_REFS */
    char fan[4096] = "{'$defs':{'d0':true";
    for (int i = 1; i <= 30; i++) {
        size_t n = strlen(fan);
        snprintf(fan + n, sizeof(fan) - n,
                 ",'d%d':{'allOf':[{'$ref':'#/$defs/d%d'},"
                 "{'$ref':'#/$defs/d%d'}]}",
                 i, i - 1, i - 1);
    }
    strcat(fan, "},'$ref':'#/$defs/d30'}");
    BADC(fan, "1", "arguments: more than 100000 \"$ref\" followed");
    TEST_PASS("$id, $anchor, $ref bounds");
}

/* sch_schema_check refuses schema (single-quoted JSON) with a message containing needle. */
#define REFUSED(schema, needle)                                                                    \
    do {                                                                                           \
        CHECK_INT_EQ(check_q(schema), MCPQ_EINVAL);                                                \
        CHECK_CONTAINS(err, needle);                                                               \
    } while (0)

/* The rule against skipping silently: unimplemented keywords are refused by name and path,
 * annotations and unknown keywords pass. */
static void test_refused_keywords(void)
{
    REFUSED("{'properties':{'a':{'$dynamicRef':'#node'}}}",
            "$.inputSchema.properties.a.$dynamicRef: invalid schema: this keyword is "
            "not supported by mcpq (docs/tools.md, \"Input schemas\")");
    REFUSED("{'items':{'$recursiveRef':'#'}}", "$.inputSchema.items.$recursiveRef: invalid schema");
    REFUSED("{'divisibleBy':2}", "$.inputSchema.divisibleBy: invalid schema");
    BADC("{'$dynamicRef':'#x'}", "1", "keyword \"$dynamicRef\" is not supported");
    CHECK_INT_EQ(check_q("{'$schema':'https://json-schema.org/draft/2020-12/schema',"
                         "'$id':'https://x.example/s','title':'t','description':'d',"
                         "'default':1,'examples':[1],'deprecated':true,'readOnly':true,"
                         "'writeOnly':false,'$comment':'c','$vocabulary':{},'format':'email',"
                         "'contentMediaType':'text/plain','contentEncoding':'base64',"
                         "'contentSchema':{},'enumNames':['A'],'x-vendor':{'$dynamicRef':1},"
                         "'whatever':[1,2]}"),
                 0);
    OK("{'format':'email'}", "'not an email'"); /* format is an annotation */
    REFUSED("{'prefixItems':[{}],'items':[{}]}",
            "\"items\" must not be an array next to \"prefixItems\"");
    REFUSED("{'dependentRequired':{'a':[1]}}",
            "\"dependentRequired\" must map names to arrays of names");
    REFUSED("{'$defs':{'a':{'$anchor':'x'},'b':{'$anchor':'x'}}}",
            "$.inputSchema: invalid schema: two subschemas are identified as \"#x\"");
    REFUSED("{'properties':{'a':{'$ref':'#nope'}}}", "cannot resolve \"$ref\": \"#nope\"");
    REFUSED("{'contains':5}",
            "$.inputSchema.contains: invalid schema: a schema must be an object or a boolean");
    REFUSED("{'minContains':-1}", "\"minContains\" must be a non-negative integer");
    TEST_PASS("refused keywords, annotations");
}

/* A compiled schema is a copy, with its patterns compiled once. */
static void test_compiled(void)
{
    cJSON *s = parse_q("{'patternProperties':{'^x_':{'pattern':'^[a-z]+$'}},"
                       "'additionalProperties':false}");
    sch_compiled_t *comp = sch_compile(s, "arguments", err, sizeof(err));
    CHECK(comp != NULL);
    cJSON_Delete(s); /* the compiled schema does not borrow it */
    cJSON *i = parse_q("{'x_a':'abc','x_b':'ABC'}");
    CHECK_INT_EQ(sch_compiled_validate(comp, i, "arguments", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "arguments.x_b: does not match the pattern \"^[a-z]+$\"");
    CHECK(cJSON_IsObject(sch_compiled_schema(comp)));
    cJSON_Delete(i);
    sch_compiled_free(comp);
    sch_compiled_free(NULL);
    s = parse_q("{'$dynamicRef':'#a'}");
    CHECK(sch_compile(s, "inputSchema", err, sizeof(err)) == NULL);
    CHECK_CONTAINS(err, "inputSchema.$dynamicRef: invalid schema");
    cJSON_Delete(s);
    CHECK_INT_EQ(sch_compiled_validate(NULL, NULL, "x", err, sizeof(err)), MCPQ_EINVAL);
    TEST_PASS("sch_compile");
}

static const char *const builtin_names[] = {
    "config.schema.json",       "job.schema.json",     "result.schema.json",
    "http-request.schema.json", "webhook.schema.json", "call-tool-result.schema.json",
};

static void *builtin_thread(void *arg)
{
    (void)arg;
    return (void *)sch_builtin("job.schema.json");
}

static void test_builtins(void)
{
    for (size_t i = 0; i < sizeof(builtin_names) / sizeof(*builtin_names); i++) {
        const cJSON *s = sch_builtin(builtin_names[i]);
        if (!s)
            fprintf(stderr, "missing embedded schema %s\n", builtin_names[i]);
        CHECK(s != NULL);
        CHECK(s == sch_builtin(builtin_names[i]));
        if (sch_schema_check(s, builtin_names[i], err, sizeof(err)) != 0)
            fprintf(stderr, "%s\n", err);
        CHECK_INT_EQ(sch_schema_check(s, builtin_names[i], err, sizeof(err)), 0);
    }
    CHECK(sch_builtin("nope.schema.json") == NULL);
    CHECK(sch_builtin(NULL) == NULL);
    pthread_t th[8];
    void *got[8];
    for (int i = 0; i < 8; i++)
        CHECK_INT_EQ(pthread_create(&th[i], NULL, builtin_thread, NULL), 0);
    for (int i = 0; i < 8; i++) {
        CHECK_INT_EQ(pthread_join(th[i], &got[i]), 0);
        CHECK(got[i] == (void *)sch_builtin("job.schema.json"));
    }
    TEST_PASS("embedded schemas");
}

/* Validates a single-quoted document against an embedded schema; returns the rc. */
static int doc(const char *schema, const char *text)
{
    cJSON *d = parse_q(text);
    err[0] = '\0';
    int rc = sch_validate(sch_builtin(schema), d, "$", err, sizeof(err));
    cJSON_Delete(d);
    return rc;
}

#define DOC_OK(schema, text)                                                                       \
    do {                                                                                           \
        int rc_ = doc(schema, text);                                                               \
        if (rc_ != 0)                                                                              \
            fprintf(stderr, "%s:%d: expected valid: %s\n", __FILE__, __LINE__, err);               \
        CHECK_INT_EQ(rc_, 0);                                                                      \
    } while (0)

#define SHA64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

#define DOC_BAD(schema, text, msg)                                                                 \
    do {                                                                                           \
        CHECK_INT_EQ(doc(schema, text), MCPQ_EINVAL);                                              \
        CHECK_STR_EQ(err, msg);                                                                    \
    } while (0)

static void test_call_tool_result(void)
{
    const char *ctr = "call-tool-result.schema.json";
    /* what the acceptance suite's conformance fixtures print */
    FILE *f = fopen("tests/unit/common/data/call-tool-results.json", "r");
    CHECK(f != NULL);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *all = cJSON_Parse(buf), *r;
    CHECK(cJSON_IsArray(all) && cJSON_GetArraySize(all) >= 6);
    cJSON_ArrayForEach(r, all)
    {
        if (sch_validate(sch_builtin(ctr), r, "$", err, sizeof(err)) != 0)
            fprintf(stderr, "%s\n", err);
        CHECK_INT_EQ(sch_validate(sch_builtin(ctr), r, "$", err, sizeof(err)), 0);
    }
    cJSON_Delete(all);
    DOC_OK(ctr, "{'content':[{'type':'resource_link','uri':'file:///a','name':'a','size':3}],"
                "'structuredContent':{'x':1},'isError':true,'_meta':{}}");
    DOC_OK(ctr, "{'content':[{'type':'resource','resource':{'uri':'u','blob':'AA=='}}]}");
    DOC_BAD(ctr, "{'isError':false}", "$: missing required property \"content\"");
    DOC_BAD(ctr, "{'content':{}}", "$.content: expected array, got object");
    DOC_BAD(ctr, "{'content':[{'type':'text'}]}",
            "$.content[0]: missing required property \"text\"");
    DOC_BAD(ctr, "{'content':[{'type':'video'}]}",
            "$.content[0].type: must be one of \"text\", \"image\", \"audio\", \"resource\", "
            "\"resource_link\"");
    DOC_BAD(ctr, "{'content':[{'type':'image','data':'x'}]}",
            "$.content[0]: missing required property \"mimeType\"");
    DOC_BAD(ctr, "{'content':[{'type':'text','text':'a'},{'type':'text','text':1}]}",
            "$.content[1].text: expected string, got integer");
    DOC_BAD(ctr, "{'content':[],'structuredContent':[1]}",
            "$.structuredContent: expected object, got array");
    DOC_BAD(ctr, "{'content':[],'isError':'yes'}", "$.isError: expected boolean, got string");
    TEST_PASS("call-tool-result.schema.json");
}

static const char *const job =
    "{'v':1,'job_id':'j_4f1c','call_id':7,'tenant':'acme','server':'default','tool':'echo',"
    "'tool_version':'1','arguments':{'text':'hi'},'attachments':[],'task_id':null,"
    "'channel_id':'c_1','session_id':'s_1','executor':{'type':'builtin','name':'echo'},"
    "'mode':'sync','timeout_ms':60000,'created_ms':1767225600000,"
    "'deadline_ms':1767225660000,'reply_to':'" NAMES_KEY_REPLY "ingress-0-1a2b',"
    "'progress_token':'abc','request_id':'r-1.x~!',"
    "'traceparent':'00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'}";

static void test_job_and_request(void)
{
    char buf[2048];
    DOC_OK("job.schema.json", job);
    DOC_OK("job.schema.json",
           "{'v':1,'job_id':'j','call_id':'x','tenant':'t','server':'s','tool':'t',"
           "'tool_version':'1','arguments':{},'executor':{'type':'exec','argv':['/bin/true']},"
           "'mode':'task','timeout_ms':1,'created_ms':0,'deadline_ms':0,'task_id':'T1',"
           "'attachments':[{'file_id':'f1','url':'http://x/f1','filename':'a.txt'}]}");
    DOC_BAD("job.schema.json", "{'v':2}", "$: missing required property \"job_id\"");
    snprintf(buf, sizeof(buf), "%s", job);
    memcpy(strstr(buf, "'v':1"), "'v':2", 5);
    DOC_BAD("job.schema.json", buf, "$.v: must be 1");
    snprintf(buf, sizeof(buf), "%s", job);
    memcpy(strstr(buf, "'mode':'sync'"), "'mode':'sand'", 13);
    DOC_BAD("job.schema.json", buf, "$.mode: must be one of \"sync\", \"task\"");
    snprintf(buf, sizeof(buf), "%s", job);
    memcpy(strstr(buf, "'r-1.x~!'"), "'r 1.x~!'", 9);
    DOC_BAD("job.schema.json", buf, "$.request_id: does not match the pattern \"^[!-~]{1,128}$\"");
    snprintf(buf, sizeof(buf), "%s", job);
    memcpy(strstr(buf, "'name':'echo'"), "'nome':'echo'", 13);
    DOC_BAD("job.schema.json", buf, "$.executor: missing required property \"name\"");
    snprintf(buf, sizeof(buf), "%s", job);
    memcpy(strstr(buf, "'00-4bf"), "'zz-4bf", 7);
    DOC_BAD("job.schema.json", buf,
            "$.traceparent: does not match the pattern "
            "\"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$\"");

    const char *req = "http-request.schema.json";
    DOC_OK(req, "{'v':1,'job_id':'j_1','call_id':7,'tenant':'acme','server':'default',"
                "'tool':'add','tool_version':'1','arguments':{'a':2,'b':3},'attachments':[],"
                "'task_id':null,'channel_id':'c_1','deadline_ms':1767225660000}");
    DOC_BAD(req,
            "{'job_id':'j','tenant':'acme','tool':'add','tool_version':'1',"
            "'arguments':{'a':1,'idempotency_key':'k'},'attachments':[],'deadline_ms':0}",
            "$.arguments.idempotency_key: is not allowed here");
    DOC_BAD(req,
            "{'job_id':'j','tenant':'acme','tool':'add','tool_version':'1',"
            "'arguments':{},'attachments':[],'deadline_ms':0,"
            "'executor':{'type':'http','url':'http://x'}}",
            "$.executor: is not allowed here");
    DOC_BAD(req,
            "{'job_id':'j','tenant':'acme','tool':'add','arguments':{},'attachments':[],"
            "'deadline_ms':0}",
            "$: missing required property \"tool_version\"");
    TEST_PASS("job.schema.json and http-request.schema.json");
}

static void test_result_and_webhook(void)
{
    const char *res = "result.schema.json", *wh = "webhook.schema.json";
    DOC_OK(res, "{'v':1,'job_id':'j_1','tenant':'acme','tool':'echo','status':'ok',"
                "'result':{'content':[{'type':'text','text':'hi'}],'isError':false},"
                "'worker':'worker-0','attempt':1,'started_ms':1,'finished_ms':2}");
    DOC_OK(res, "{'v':1,'job_id':'j_1','tenant':'acme','tool':'echo','status':'timeout'}");
    DOC_OK(res, "{'v':1,'job_id':'j_1','tenant':'acme','tool':'echo','status':'error',"
                "'error':{'code':-32603,'message':'boom'}}");
    DOC_BAD(res, "{'v':1,'job_id':'j_1','tenant':'acme','tool':'echo','status':'ok'}",
            "$: missing required property \"result\"");
    DOC_BAD(res,
            "{'v':1,'job_id':'j_1','tenant':'acme','tool':'echo','status':'error',"
            "'error':{'code':1.5,'message':'x'}}",
            "$.error.code: expected integer, got number");
    DOC_BAD(res,
            "{'v':1,'job_id':'j_1','tenant':'acme','tool':'echo','status':'ok',"
            "'result':{'content':[{'type':'text'}]}}",
            "$.result.content[0]: missing required property \"text\"");
    DOC_OK(res, "{'v':1,'job_id':'j_1','tenant':'acme','tool':'readme','status':'ok',"
                "'result':{'contents':[{'uri':'docs://readme','mimeType':'text/markdown',"
                "'text':'# Hi'}]}}");
    DOC_OK(res, "{'v':1,'job_id':'j_1','tenant':'acme','tool':'greet','status':'ok',"
                "'result':{'messages':[{'role':'user','content':{'type':'text','text':'hi'}}]}}");
    DOC_OK(res, "{'v':1,'job_id':'j_1','tenant':'acme','tool':'greet','status':'ok',"
                "'result':{'completion':{'values':['a'],'total':1,'hasMore':false}}}");
    DOC_OK(res, "{'v':1,'job_id':'j_1','tenant':'acme','tool':'r','status':'ok','result':{}}");
    DOC_BAD(res,
            "{'v':1,'job_id':'j_1','tenant':'acme','tool':'r','status':'ok',"
            "'result':{'contents':[{'text':'no uri'}]}}",
            "$.result.contents[0]: missing required property \"uri\"");
    DOC_BAD(res, "{'v':1,'job_id':'j_1','tenant':'acme','tool':'echo','status':'done'}",
            "$.status: must be one of \"ok\", \"timeout\", \"error\"");

    DOC_OK(wh, "{'type':'task.completed','timestamp':'2026-01-01T00:00:00Z',"
               "'data':{'TaskId':'t1','TaskStatus':'complete','tool':'rpa_report',"
               "'result':{'content':[{'type':'text','text':'ok'}],'isError':false}}}");
    DOC_OK(wh, "{'type':'task.running','timestamp':'2026-01-01T00:00:00.123Z',"
               "'data':{'TaskId':'t1','TaskStatus':'running','tool':'rpa_report'}}");
    DOC_BAD(wh,
            "{'type':'task.completed','timestamp':'2026-01-01T00:00:00Z',"
            "'data':{'TaskId':'t1','TaskStatus':'running','tool':'x','result':{'content':[]}}}",
            "$.data.TaskStatus: must be \"complete\"");
    DOC_BAD(wh,
            "{'type':'task.done','timestamp':'2026-01-01T00:00:00Z',"
            "'data':{'TaskId':'t1','TaskStatus':'running','tool':'x'}}",
            "$.type: must be one of \"task.running\", \"task.input_required\", \"task.completed\", "
            "\"task.terminated\", "
            "\"task.cancelled\", \"tool.changed\"");
    /* tool.changed (docs/security.md, "Pinned tool definitions"): no task, its own data */
    DOC_OK(wh, "{'type':'tool.changed','timestamp':'2026-01-01T00:00:00Z',"
               "'data':{'tenant':'t','server':'fed','tool':'up_echo','reason':'changed',"
               "'old_sha256':'" SHA64 "','new_sha256':'" SHA64 "','changed':['description']}}");
    DOC_OK(wh, "{'type':'tool.changed','timestamp':'2026-01-01T00:00:00Z',"
               "'data':{'tenant':'t','server':'fed','tool':'up_echo','reason':'new',"
               "'old_sha256':null,'new_sha256':'" SHA64 "','changed':[]}}");
    DOC_BAD(wh,
            "{'type':'task.running','timestamp':'2026-01-01T00:00:00Z',"
            "'data':{'tenant':'t','server':'fed','tool':'up_echo'}}",
            "$.data: missing required property \"TaskId\"");
    DOC_BAD(wh,
            "{'type':'task.running','timestamp':'yesterday',"
            "'data':{'TaskId':'t1','TaskStatus':'running','tool':'x'}}",
            "$.timestamp: does not match the pattern "
            "\"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z$\"");
    TEST_PASS("result.schema.json and webhook.schema.json");
}

int main(void)
{
    test_types();
    test_objects();
    test_arrays();
    test_strings_numbers();
    test_patterns();
    test_enum_const();
    test_combinators();
    test_refs();
    test_booleans_and_bad_schemas();
    test_depth();
    test_schema_check();
    test_2020_applicators();
    test_multiple_of();
    test_unevaluated();
    test_ids_and_anchors();
    test_refused_keywords();
    test_compiled();
    test_builtins();
    test_call_tool_result();
    test_job_and_request();
    test_result_and_webhook();
    return 0;
}
