/* Tests common/schdoc.c: reference resolution against a base URI (the examples of RFC 3986
 * section 5.4, normal and abnormal), the identifier index of a document, JSON pointers and
 * "$ref" resolution through "$id" and "$anchor". */
#include "check.h"
#include "schdoc.h"

static void resolves(const char *base, const char *ref, const char *want)
{
    char out[SCH_DOC_URI_MAX];
    CHECK_INT_EQ(sch_doc_uri_resolve(base, ref, out, sizeof(out)), 0);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "resolving \"%s\" against \"%s\"\n", ref, base);
    CHECK_STR_EQ(out, want);
}

static void test_rfc3986(void)
{
    static const char *const cases[][2] = {
        {"g:h", "g:h"},
        {"g", "http://a/b/c/g"},
        {"./g", "http://a/b/c/g"},
        {"g/", "http://a/b/c/g/"},
        {"/g", "http://a/g"},
        {"//g", "http://g"},
        {"?y", "http://a/b/c/d;p?y"},
        {"g?y", "http://a/b/c/g?y"},
        {"#s", "http://a/b/c/d;p?q#s"},
        {"g#s", "http://a/b/c/g#s"},
        {";x", "http://a/b/c/;x"},
        {"", "http://a/b/c/d;p?q"},
        {".", "http://a/b/c/"},
        {"./", "http://a/b/c/"},
        {"..", "http://a/b/"},
        {"../", "http://a/b/"},
        {"../g", "http://a/b/g"},
        {"../..", "http://a/"},
        {"../../", "http://a/"},
        {"../../g", "http://a/g"},
        /* abnormal */
        {"../../../g", "http://a/g"},
        {"../../../../g", "http://a/g"},
        {"/./g", "http://a/g"},
        {"/../g", "http://a/g"},
        {"g.", "http://a/b/c/g."},
        {".g", "http://a/b/c/.g"},
        {"g..", "http://a/b/c/g.."},
        {"..g", "http://a/b/c/..g"},
        {"./../g", "http://a/b/g"},
        {"./g/.", "http://a/b/c/g/"},
        {"g/./h", "http://a/b/c/g/h"},
        {"g/../h", "http://a/b/c/h"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
        resolves("http://a/b/c/d;p?q", cases[i][0], cases[i][1]);
    /* bases JSON Schema documents use: none, a URN, a relative file name */
    resolves("", "#/$defs/a", "#/$defs/a");
    resolves("", "item.json", "item.json");
    resolves("urn:uuid:deadbeef", "#x", "urn:uuid:deadbeef#x");
    resolves("dir/root.json", "item.json#/a", "dir/item.json#/a");
    char small[8];
    CHECK_INT_EQ(sch_doc_uri_resolve("http://a/", "long-name", small, sizeof(small)), -1);
    TEST_PASS("sch_doc_uri_resolve: RFC 3986 section 5.4");
}

static void test_index_and_refs(void)
{
    cJSON *doc = cJSON_Parse("{\"$id\":\"https://x.example/s/root.json\",\"$defs\":{"
                             "\"a\":{\"$anchor\":\"here\",\"type\":\"integer\"},"
                             "\"b\":{\"$id\":\"sub/b.json\",\"$defs\":{\"c\":{\"$anchor\":\"c\"}}},"
                             "\"d\":{\"$id\":\"#old\"}},"
                             "\"enum\":[{\"$id\":\"not-an-id.json\"}]}");
    sch_doc_index_t *idx = sch_doc_index_new(doc, 64);
    CHECK(idx != NULL);
    CHECK(sch_doc_index_find(idx, "https://x.example/s/root.json")->node == doc);
    const cJSON *defs = cJSON_GetObjectItem(doc, "$defs");
    const cJSON *b = cJSON_GetObjectItem(defs, "b");
    CHECK(sch_doc_index_find(idx, "https://x.example/s/sub/b.json")->node == b);
    CHECK(sch_doc_index_find(idx, "https://x.example/s/root.json#here")->node ==
          cJSON_GetObjectItem(defs, "a"));
    CHECK(sch_doc_index_find(idx, "https://x.example/s/sub/b.json#c") != NULL);
    CHECK(sch_doc_index_find(idx, "https://x.example/s/root.json#old") != NULL);  /* draft 7 */
    CHECK(sch_doc_index_find(idx, "https://x.example/s/not-an-id.json") == NULL); /* data */
    CHECK(sch_doc_index_resource(idx, b) != NULL);
    CHECK(sch_doc_index_duplicate(idx) == NULL);

    sch_doc_loc_t cur = {doc, doc, "https://x.example/s/root.json"}, out;
    char abs[SCH_DOC_URI_MAX];
    CHECK_INT_EQ(sch_doc_ref(idx, &cur, "#here", &out, abs), 0);
    CHECK(out.node == cJSON_GetObjectItem(defs, "a"));
    CHECK_INT_EQ(sch_doc_ref(idx, &cur, "sub/b.json#/$defs/c", &out, abs), 0);
    CHECK(out.res == b); /* the pointer's target lies in b's resource */
    CHECK_STR_EQ(out.base, "https://x.example/s/sub/b.json");
    /* a pointer from the root into b's subresource crosses b's "$id" */
    CHECK_INT_EQ(sch_doc_ref(idx, &cur, "#/$defs/b/$defs/c", &out, abs), 0);
    CHECK(out.res == b);
    CHECK_INT_EQ(sch_doc_ref(idx, &cur, "other.json", &out, abs), -1);
    CHECK_STR_EQ(abs, "https://x.example/s/other.json");
    CHECK_INT_EQ(sch_doc_ref(idx, &cur, "#/$defs/zz", &out, abs), -1);
    CHECK_INT_EQ(sch_doc_ref(idx, &cur, "#/$defs/a/type/x", &out, abs), -1);
    CHECK_INT_EQ(sch_doc_ref(idx, &cur, "#/enum/0", &out, abs), 0); /* pointers go anywhere */
    CHECK_INT_EQ(sch_doc_ref(idx, &cur, "#/enum/1", &out, abs), -1);
    CHECK_INT_EQ(sch_doc_ref(idx, &cur, "#nope", &out, abs), -1);
    /* without an index only the current resource's fragments resolve */
    sch_doc_loc_t plain = {doc, doc, ""};
    CHECK_INT_EQ(sch_doc_ref(NULL, &plain, "#/$defs/a", &out, abs), 0);
    CHECK_INT_EQ(sch_doc_ref(NULL, &plain, "#here", &out, abs), -1);
    sch_doc_index_free(idx);
    sch_doc_index_free(NULL);
    cJSON_Delete(doc);

    doc = cJSON_Parse("{\"$defs\":{\"a\":{\"$anchor\":\"x\"},\"b\":{\"$anchor\":\"x\"}},"
                      "\"not\":{\"not\":{\"not\":{\"$id\":\"deep.json\"}}}}");
    idx = sch_doc_index_new(doc, 2);
    CHECK_STR_EQ(sch_doc_index_duplicate(idx), "#x");
    CHECK(idx->depth_exceeded);
    CHECK(sch_doc_index_find(idx, "deep.json") == NULL);
    sch_doc_index_free(idx);
    cJSON_Delete(doc);
    TEST_PASS("sch_doc_index, sch_doc_ref, sch_doc_pointer");
}

int main(void)
{
    test_rfc3986();
    test_index_and_refs();
    return 0;
}
