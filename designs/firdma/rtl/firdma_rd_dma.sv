// firdma read DMA: AXI4 INCR read bursts covering [SRC_ADDR, SRC_ADDR + 2*LEN) rounded up to
// whole beats; never longer than BURST beats, never across a 4 KB boundary.
`default_nettype none
module firdma_rd_dma #(
    parameter int DATA_W = 32,
    parameter int MAX_OUTSTANDING = 4  // read bursts in flight
) (
    input  wire              clk,
    input  wire              rst_n,
    input  wire              job_start,   // pulse: load the job
    input  wire              stop,        // abort or error: issue nothing more, drain
    input  wire [31:0]       src_addr,
    input  wire [15:0]       len,
    input  wire [4:0]        burst,
    // AXI4 read address / data channels
    output reg  [31:0]       m_axi_araddr,
    output reg  [7:0]        m_axi_arlen,
    output wire [2:0]        m_axi_arsize,
    output wire [1:0]        m_axi_arburst,
    output wire              m_axi_arlock,
    output wire [3:0]        m_axi_arcache,
    output wire [2:0]        m_axi_arprot,
    output reg               m_axi_arvalid,
    input  wire              m_axi_arready,
    input  wire [DATA_W-1:0] m_axi_rdata,
    input  wire [1:0]        m_axi_rresp,
    input  wire              m_axi_rlast,
    input  wire              m_axi_rvalid,
    output wire              m_axi_rready,
    // to the buffer
    output wire              push_valid,
    output wire [DATA_W-1:0] push_data,
    input  wire              push_ready,
    output wire              rd_err,      // pulse: first read response error of the job
    output wire              idle         // no request pending, no burst in flight
);
    localparam int BYTES = DATA_W / 8;
    localparam int LANES = DATA_W / 16;
    localparam int ASH = $clog2(BYTES);
    localparam int LSH = $clog2(LANES);
    localparam int OW = $clog2(MAX_OUTSTANDING + 1);

    reg [31:0]   addr;
    reg [16:0]   beats_left;
    reg [OW-1:0] in_flight;
    reg          err_seen;
    reg          halted;      // stopped by abort or error: stays stopped until the next job

    assign m_axi_arsize  = 3'(ASH);
    assign m_axi_arburst = 2'b01;  // INCR
    assign m_axi_arlock  = 1'b0;
    assign m_axi_arcache = 4'b0011;
    assign m_axi_arprot  = 3'b000;

    // Beats left before the next 4 KB boundary.
    wire [12:0] to_4k = 13'(13'h1000 - {1'b0, addr[11:0]}) >> ASH;
    logic [16:0] next_len;
    always_comb begin
        next_len = {12'd0, burst};
        if (beats_left < next_len) next_len = beats_left;
        if ({4'd0, to_4k} < next_len) next_len = {4'd0, to_4k};
    end

    wire discard = stop | err_seen | halted;
    wire ar_fire = m_axi_arvalid & m_axi_arready;
    wire r_fire = m_axi_rvalid & m_axi_rready;
    wire r_last_fire = r_fire & m_axi_rlast;

    assign m_axi_rready = discard | push_ready;
    assign push_valid = r_fire & ~discard & ~m_axi_rresp[1];  // OKAY or EXOKAY
    assign push_data = m_axi_rdata;
    assign rd_err = r_fire & ~discard & m_axi_rresp[1];         // SLVERR or DECERR
    assign idle = ~m_axi_arvalid & (in_flight == '0);
    wire unused_exokay = m_axi_rresp[0];  // EXOKAY counts as OKAY

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            addr          <= 32'd0;
            beats_left    <= 17'd0;
            in_flight     <= '0;
            err_seen      <= 1'b0;
            halted        <= 1'b0;
            m_axi_arvalid <= 1'b0;
            m_axi_araddr  <= 32'd0;
            m_axi_arlen   <= 8'd0;
        end else begin
            if (job_start) begin
                addr       <= src_addr;
                beats_left <= 17'(({1'b0, len} + 17'(LANES - 1)) >> LSH);
                err_seen   <= 1'b0;
                halted     <= 1'b0;
            end else begin
                if (rd_err) err_seen <= 1'b1;
                if (stop) halted <= 1'b1;
                if (ar_fire) begin
                    m_axi_arvalid <= 1'b0;
                    addr       <= addr + (({24'd0, m_axi_arlen} + 32'd1) << ASH);
                    beats_left <= beats_left - ({9'd0, m_axi_arlen} + 17'd1);
                end else if (!m_axi_arvalid && !discard && beats_left != 17'd0
                             && in_flight != OW'(MAX_OUTSTANDING)) begin
                    m_axi_arvalid <= 1'b1;
                    m_axi_araddr  <= addr;
                    m_axi_arlen   <= 8'(next_len - 17'd1);
                end
            end
            if (ar_fire && !r_last_fire) in_flight <= in_flight + 1'b1;
            else if (!ar_fire && r_last_fire) in_flight <= in_flight - 1'b1;
        end
    end
endmodule
`default_nettype wire
