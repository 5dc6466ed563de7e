// `ibt export`'s logic: CSV and JSON content from a real results file.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include "core/errors.hpp"
#include "reports/store/store.hpp"
#include "reports/tables/collectives_table.hpp"
#include "reports/text/export.hpp"
#include "tests/reports/store/test_support.hpp"

namespace ibt::reports {
namespace {

using store::ColumnType;
using store::Row;

using tables::CollectiveRow;

Row collectives_row(const char* op, std::uint64_t bytes, double time_us, double busbw) {
  CollectiveRow r;
  r.op = op;
  r.scope = "world";
  r.backend = "mpi";
  r.dtype = "float32";
  r.reduce_op = "sum";
  r.placement = "out";
  r.group_size = 4;
  r.groups = 1;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.iters = 20;
  r.time_us = time_us;
  r.p50_us = time_us;
  r.p99_us = time_us * 1.5;
  r.algbw_GBps = bytes / time_us / 1e3;
  r.busbw_GBps = busbw;
  return store::to_row(r);
}

// Runs 1 and 2: "collectives" tables; run 3: a table of another name and shape.
class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("results.h5");
    auto store = store::open_for_append(path_);
    {
      auto run = store->begin_run("collectives");
      run->set_attr("world_size", std::int64_t{4});
      run->set_attr("command_line", std::string("ibt collectives -b 8 -e 16"));
      run->set_environment({{"UCX_TLS", "sm,self"}});
      auto& t = run->table(std::string(CollectiveRow::kTable), store::columns_of<CollectiveRow>());
      t.append(collectives_row("all_reduce", 8, 0.1, 0.12));
      t.append(collectives_row("all_reduce", 16, 1.0 / 3, 1e-300));
      run->finish(store::RunStatus::complete);
    }
    {
      auto run = store->begin_run("collectives");
      auto& t = run->table(std::string(CollectiveRow::kTable), store::columns_of<CollectiveRow>());
      t.append(collectives_row("broadcast", 8, 2.5, 3.0));
      run->finish(store::RunStatus::failed, "rank 3 did not arrive");
    }
    {
      auto run = store->begin_run("notes, \"quoted\"");
      auto& t = run->table("notes", {{"text", ColumnType::str}, {"big", ColumnType::u64, "B"}});
      t.append({std::string("a, \"b\"\nc"), std::numeric_limits<std::uint64_t>::max()});
      run->finish(store::RunStatus::complete);
    }
  }

  std::string csv(const ExportSelection& selection) {
    std::ostringstream out;
    write_csv(out, path_, selection);
    return out.str();
  }

  test::ScratchDir dir_;
  std::string path_;
};

const char* kCollectivesHeader =
    "run_id,kind,op,scope,backend,dtype,reduce_op,placement,group_size,groups,bytes,count,iters,time_us,p50_us,"
    "p99_us,algbw_GBps,busbw_GBps,wrong\n";

TEST_F(ExportTest, CsvConcatenatesRunsOfOneTableWithExactNumbers) {
  const std::string text = csv({std::nullopt, std::string("collectives")});
  EXPECT_EQ(text, std::string(kCollectivesHeader) +
                      "000001,collectives,all_reduce,world,mpi,float32,sum,out,4,1,8,2,20,0.1,0.1,"
                      "0.15000000000000002,0.08,0.12,0\n"
                      "000001,collectives,all_reduce,world,mpi,float32,sum,out,4,1,16,4,20,0.3333333333333333,"
                      "0.3333333333333333,0.5,0.048,1e-300,0\n"
                      "000002,collectives,broadcast,world,mpi,float32,sum,out,4,1,8,2,20,2.5,2.5,3.75,0.0032,3,0\n");
}

TEST_F(ExportTest, CsvOfOneRunByNumberOrLast) {
  const std::string second = csv({std::string("2"), std::nullopt});
  EXPECT_EQ(second.substr(0, second.find('\n') + 1), kCollectivesHeader);
  EXPECT_NE(second.find("000002,collectives,broadcast"), std::string::npos);
  EXPECT_EQ(second.find("000001"), std::string::npos);
  EXPECT_EQ(csv({std::string("last"), std::nullopt}),
            "run_id,kind,text,big\n"
            "000003,\"notes, \"\"quoted\"\"\",\"a, \"\"b\"\"\nc\",18446744073709551615\n");
}

TEST_F(ExportTest, CsvRefusesSeveralTablesWithoutTable) {
  try {
    csv({});
    FAIL() << "several tables exported into one CSV";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("several tables (collectives, notes)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--table"), std::string::npos) << e.what();
  }
}

TEST_F(ExportTest, CsvRefusesTablesOfOneNameWithDifferentColumns) {
  {
    auto run = store::open_for_append(path_)->begin_run("collectives");
    run->table(std::string(CollectiveRow::kTable), {{"op", ColumnType::str}}).append({std::string("x")});
    run->finish(store::RunStatus::complete);
  }
  try {
    csv({std::nullopt, std::string("collectives")});
    FAIL() << "tables of different columns concatenated";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("different columns in runs 000001 and 000004"), std::string::npos) << e.what();
  }
  EXPECT_NE(csv({std::string("4"), std::string("collectives")}).find("000004,collectives,x"), std::string::npos);
}

TEST_F(ExportTest, UnknownRunOrTableIsAUsageError) {
  EXPECT_THROW(csv({std::string("9"), std::nullopt}), UsageError);
  EXPECT_THROW(csv({std::nullopt, std::string("nope")}), UsageError);
  EXPECT_THROW(export_json(path_, {std::string("000009"), std::nullopt}), UsageError);
  EXPECT_THROW(export_json(dir_.file("missing.h5"), {}), UsageError);
}

TEST_F(ExportTest, JsonHoldsAttributesEnvironmentAndTables) {
  const nlohmann::json doc = nlohmann::json::parse(export_json(path_, {}).dump());
  EXPECT_EQ(doc["schema"], "ibt-results");
  EXPECT_EQ(doc["schema_version"], store::kSchemaVersion);
  ASSERT_EQ(doc["runs"].size(), 3u);

  const auto& first = doc["runs"][0];
  EXPECT_EQ(first["id"], "000001");
  EXPECT_EQ(first["attributes"]["kind"], "collectives");
  EXPECT_EQ(first["attributes"]["status"], "complete");
  EXPECT_EQ(first["attributes"]["world_size"], 4);
  EXPECT_EQ(first["environment"]["UCX_TLS"], "sm,self");
  const auto& table = first["tables"]["collectives"];
  ASSERT_EQ(table["columns"].size(), CollectiveRow::kFields.size());
  EXPECT_EQ(table["columns"][14]["name"], "algbw_GBps");
  EXPECT_EQ(table["columns"][14]["unit"], "GB/s");
  EXPECT_EQ(table["columns"][14]["type"], "f64");
  EXPECT_FALSE(table["columns"][0].contains("bytes"));  // variable-length: no width to state
  ASSERT_EQ(table["rows"].size(), 2u);
  EXPECT_EQ(table["rows"][1]["op"], "all_reduce");
  EXPECT_EQ(table["rows"][1]["bytes"], 16u);
  EXPECT_EQ(table["rows"][1]["time_us"].get<double>(), 1.0 / 3);
  EXPECT_EQ(table["rows"][1]["busbw_GBps"].get<double>(), 1e-300);

  EXPECT_EQ(doc["runs"][1]["attributes"]["error"], "rank 3 did not arrive");
  const auto& notes = doc["runs"][2]["tables"]["notes"]["rows"][0];
  EXPECT_EQ(notes["text"], "a, \"b\"\nc");
  EXPECT_EQ(notes["big"].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
}

TEST_F(ExportTest, JsonSelectionKeepsOneRunAndOneTable) {
  const nlohmann::ordered_json doc = export_json(path_, {std::string("1"), std::string("collectives")});
  ASSERT_EQ(doc["runs"].size(), 1u);
  EXPECT_EQ(doc["runs"][0]["id"], "000001");
  EXPECT_EQ(doc["runs"][0]["tables"].size(), 1u);
}

TEST(ExportFormat, ExactNumbersAndCsvQuoting) {
  EXPECT_EQ(exact_number(0.1), "0.1");
  EXPECT_EQ(exact_number(1e21), "1e+21");
  EXPECT_EQ(exact_number(-0.0), "-0");
  EXPECT_EQ(exact_number(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(exact_number(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(std::stod(exact_number(2.0 / 3)), 2.0 / 3);
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
}

}  // namespace
}  // namespace ibt::reports
